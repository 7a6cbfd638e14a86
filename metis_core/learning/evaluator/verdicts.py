"""Verdicts, append-only: every evaluation adds a row; re-evaluating never rewrites an old one.

Also answers the questions others ask of verdicts: the latest score of a subject (the pattern
store), and what the LLM judge has spent since a moment (the daily cap).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson

from metis_core.learning.database import LearningDatabase
from metis_core.store.records import to_us


@dataclass(frozen=True)
class Verdict:
    eval_id: str
    subject_kind: str
    subject_id: str
    session_id: str
    rubric_id: str
    rubric_version: str
    judge_kind: str
    judge_model: str | None
    score: float
    confidence: float
    judge_cost_usd: Decimal
    signals: dict[str, Any]
    trigger: str
    created_at_us: int = 0


COLUMNS = ("eval_id, subject_kind, subject_id, session_id, rubric_id, rubric_version, judge_kind, judge_model, "
           "score, confidence, judge_cost_usd, signals_json, trigger, created_at")


def _verdict(row: tuple[Any, ...]) -> Verdict:
    return Verdict(
        eval_id=row[0], subject_kind=row[1], subject_id=row[2], session_id=row[3], rubric_id=row[4],
        rubric_version=row[5], judge_kind=row[6], judge_model=row[7], score=row[8], confidence=row[9],
        judge_cost_usd=Decimal(row[10]), signals=orjson.loads(row[11]), trigger=row[12], created_at_us=row[13],
    )


class VerdictStore:
    def __init__(self, db: LearningDatabase) -> None:
        self.db = db

    def append(self, verdict: Verdict) -> Verdict:
        created = verdict.created_at_us or time.time_ns() // 1000
        with self.db.writing() as conn:
            conn.execute(f"INSERT INTO eval_verdicts ({COLUMNS}) VALUES ({', '.join('?' * 14)})", (
                verdict.eval_id, verdict.subject_kind, verdict.subject_id, verdict.session_id, verdict.rubric_id,
                verdict.rubric_version, verdict.judge_kind, verdict.judge_model, verdict.score, verdict.confidence,
                str(verdict.judge_cost_usd), orjson.dumps(verdict.signals).decode(), verdict.trigger, created,
            ))
        return verdict

    def latest(self, subject_kind: str, subject_id: str) -> Verdict | None:
        rows = self.db.rows(f"SELECT {COLUMNS} FROM eval_verdicts WHERE subject_kind = ? AND subject_id = ? "
                            "ORDER BY eval_id DESC LIMIT 1", (subject_kind, subject_id))
        return _verdict(rows[0]) if rows else None

    def of_subject(self, subject_kind: str, subject_id: str) -> list[Verdict]:
        rows = self.db.rows(f"SELECT {COLUMNS} FROM eval_verdicts WHERE subject_kind = ? AND subject_id = ? "
                            "ORDER BY eval_id", (subject_kind, subject_id))
        return [_verdict(r) for r in rows]

    def since(self, moment: datetime | None = None, limit: int = 1000) -> list[Verdict]:
        rows = self.db.rows(f"SELECT {COLUMNS} FROM eval_verdicts WHERE created_at >= ? ORDER BY eval_id DESC "
                            "LIMIT ?", (to_us(moment) if moment else 0, limit))
        return [_verdict(r) for r in rows]

    def judge_spend_since(self, moment: datetime) -> Decimal:
        rows = self.db.rows("SELECT judge_cost_usd FROM eval_verdicts WHERE created_at >= ? AND judge_cost_usd != '0'",
                            (to_us(moment),))
        return sum((Decimal(r[0]) for r in rows), Decimal(0))
