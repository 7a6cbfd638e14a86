"""`PatternStore`: fingerprints and the outcomes (score, cost, latency, model) seen for them.

One row per distinct fingerprint, one outcome row per recorded turn. Caps count outcome rows:
past the soft cap a write is flagged (soft_cap_signal); past the hard cap the oldest outcomes
are evicted back down to the soft cap. Outcomes older than `max_age_days` are trimmed. Every
removal leaves no fingerprint without outcomes. Callers turn the returned `Eviction`s into
pattern.evicted events.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from metis_core.ids import new_ulid
from metis_core.learning.database import LearningDatabase
from metis_core.learning.patterns.fingerprint import Fingerprint, distance, in_feature_order
from metis_core.learning.settings import PatternSettings

US_PER_DAY = 86_400 * 1_000_000
RECORD_OUTCOME = (
    # a turn recorded again replaces its outcome (portable upsert: SQLite 3.24+ and PostgreSQL)
    "INSERT INTO pattern_outcomes (fingerprint_id, session_id, turn_id, model, score, cost_usd, latency_ms, "
    "pricing_version, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (turn_id, fingerprint_id) DO UPDATE "
    "SET session_id = excluded.session_id, model = excluded.model, score = excluded.score, "
    "cost_usd = excluded.cost_usd, latency_ms = excluded.latency_ms, pricing_version = excluded.pricing_version, "
    "recorded_at = excluded.recorded_at"
)


@dataclass(frozen=True)
class Recorded:
    fingerprint_id: str
    was_new: bool
    sample_size_before: int
    sample_size_after: int
    over_soft_cap: bool


@dataclass(frozen=True)
class Eviction:
    trigger: str
    fingerprints_before: int
    fingerprints_after: int
    outcomes_before: int
    outcomes_after: int
    entries_evicted: int
    oldest_evicted_age_days: float | None = None

    def payload(self) -> dict[str, Any]:
        return {
            "trigger": self.trigger, "fingerprints_before": self.fingerprints_before,
            "fingerprints_after": self.fingerprints_after, "outcomes_before": self.outcomes_before,
            "outcomes_after": self.outcomes_after, "entries_evicted": self.entries_evicted,
            "oldest_evicted_age_days": self.oldest_evicted_age_days,
        }


@dataclass(frozen=True)
class Outcome:
    fingerprint_id: str
    model: str
    score: float | None
    cost_usd: Decimal
    latency_ms: int
    recorded_at_us: int = 0
    source: str = "observed"
    """"observed" (a turn a user ran) or "learned" (a replay of a stored turn: `metis learn`, `metis replay`)."""
    session_id: str = ""
    turn_id: str = ""


@dataclass(frozen=True)
class Rescored:
    """An outcome whose score a later verdict on its turn replaced."""

    fingerprint_id: str
    fingerprint_kind: str
    session_id: str
    model: str
    cost_usd: Decimal
    pricing_version: str
    sample_size: int


@dataclass(frozen=True)
class StoredFingerprint:
    id: str
    fingerprint: Fingerprint
    created_at_us: int
    last_seen_at_us: int


def _now_us() -> int:
    return time.time_ns() // 1000


class PatternStore:
    def __init__(self, db: LearningDatabase, settings: PatternSettings | None = None) -> None:
        self.db = db
        self.settings = settings or PatternSettings()

    # --- writing ------------------------------------------------------------------------------

    def record(self, fp: Fingerprint, *, session_id: str, turn_id: str, model: str, score: float | None,
               cost_usd: Decimal, latency_ms: int, pricing_version: str, now_us: int | None = None) -> Recorded:
        now = now_us or _now_us()
        embedding = orjson.dumps(list(fp.embedding)).decode() if fp.embedding is not None else None
        with self.db.writing() as conn:
            row = conn.execute("SELECT id FROM pattern_fingerprints WHERE feature_key = ?", (fp.key,)).fetchone()
            was_new = row is None
            fingerprint_id = new_ulid() if row is None else str(row[0])
            if was_new:
                conn.execute(
                    "INSERT INTO pattern_fingerprints (id, feature_key, kind, features_json, embedding_json, "
                    "created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (fingerprint_id, fp.key, fp.kind, orjson.dumps(fp.features).decode(), embedding, now, now))
            else:
                conn.execute("UPDATE pattern_fingerprints SET last_seen_at = ? WHERE id = ?", (now, fingerprint_id))
            (before,) = conn.execute("SELECT COUNT(*) FROM pattern_outcomes WHERE fingerprint_id = ? AND model = ?",
                                     (fingerprint_id, model)).fetchone()
            conn.execute(RECORD_OUTCOME, (fingerprint_id, session_id, turn_id, model, score, str(cost_usd), latency_ms,
                                          pricing_version, now))
            (after,) = conn.execute("SELECT COUNT(*) FROM pattern_outcomes WHERE fingerprint_id = ? AND model = ?",
                                    (fingerprint_id, model)).fetchone()
            (total,) = conn.execute("SELECT COUNT(*) FROM pattern_outcomes").fetchone()
        return Recorded(fingerprint_id, was_new, int(before), int(after), int(total) > self.settings.soft_cap_rows)

    def is_recorded(self, turn_id: str) -> bool:
        return bool(self.db.rows("SELECT 1 FROM pattern_outcomes WHERE turn_id = ? LIMIT 1", (turn_id,)))

    def turns_of_session(self, session_id: str) -> list[str]:
        rows = self.db.rows("SELECT DISTINCT turn_id FROM pattern_outcomes WHERE session_id = ? ORDER BY turn_id",
                            (session_id,))
        return [str(r[0]) for r in rows]

    def rescore(self, turn_id: str, score: float | None) -> list[Rescored]:
        """Give the outcomes recorded for `turn_id` a new score; those it changed (none when unrecorded)."""
        rows = self.db.rows(  # read first: most verdicts (every turn's first) change nothing here
            "SELECT o.fingerprint_id, f.kind, o.session_id, o.model, o.cost_usd, o.pricing_version, o.score "
            "FROM pattern_outcomes o JOIN pattern_fingerprints f ON f.id = o.fingerprint_id "
            "WHERE o.turn_id = ? ORDER BY o.id", (turn_id,))
        changed = [r for r in rows if r[6] != score]
        if not changed:
            return []
        with self.db.writing() as conn:
            conn.execute("UPDATE pattern_outcomes SET score = ? WHERE turn_id = ?", (score, turn_id))
            rescored = []
            for r in changed:
                (count,) = conn.execute("SELECT COUNT(*) FROM pattern_outcomes WHERE fingerprint_id = ? AND model = ?",
                                        (r[0], r[3])).fetchone()
                rescored.append(Rescored(str(r[0]), str(r[1]), str(r[2]), str(r[3]), Decimal(r[4]), str(r[5]),
                                         int(count)))
        return rescored

    def enforce_caps(self) -> Eviction | None:
        """soft_cap_signal past the soft cap; past the hard cap, evict the oldest down to the soft cap."""
        fingerprints, outcomes = self.counts()
        if outcomes <= self.settings.soft_cap_rows:
            return None
        if outcomes <= self.settings.hard_cap_rows:
            return Eviction("soft_cap_signal", fingerprints, fingerprints, outcomes, outcomes, 0)
        excess = outcomes - self.settings.soft_cap_rows
        return self._evict("hard_cap_evict", "SELECT id FROM pattern_outcomes ORDER BY recorded_at, id LIMIT ?",
                           (excess,))

    def age_trim(self, now_us: int | None = None) -> Eviction | None:
        cutoff = (now_us or _now_us()) - int(self.settings.max_age_days * US_PER_DAY)
        return self._evict("age_trim", "SELECT id FROM pattern_outcomes WHERE recorded_at < ?", (cutoff,),
                           now_us=now_us)

    def clear(self) -> Eviction:
        eviction = self._evict("manual_clear", "SELECT id FROM pattern_outcomes", ())
        fingerprints, outcomes = self.counts()
        if eviction is None:
            return Eviction("manual_clear", fingerprints, fingerprints, outcomes, outcomes, 0)
        return eviction

    def _evict(self, trigger: str, select: str, params: tuple[Any, ...], now_us: int | None = None) -> Eviction | None:
        now = now_us or _now_us()
        with self.db.writing() as conn:
            (fp_before,) = conn.execute("SELECT COUNT(*) FROM pattern_fingerprints").fetchone()
            (out_before,) = conn.execute("SELECT COUNT(*) FROM pattern_outcomes").fetchone()
            ids = [r[0] for r in conn.execute(select, params).fetchall()]
            if not ids and trigger != "manual_clear":
                return None
            oldest = None
            if ids:
                marks = ", ".join("?" * len(ids))
                (first,) = conn.execute(f"SELECT MIN(recorded_at) FROM pattern_outcomes WHERE id IN ({marks})",
                                        ids).fetchone()
                oldest = round(max(0, now - int(first)) / US_PER_DAY, 3)
                conn.execute(f"DELETE FROM pattern_outcomes WHERE id IN ({marks})", ids)
            if trigger == "manual_clear":
                conn.execute("DELETE FROM pattern_fingerprints")
            else:
                conn.execute("DELETE FROM pattern_fingerprints WHERE id NOT IN "
                             "(SELECT DISTINCT fingerprint_id FROM pattern_outcomes)")
            (fp_after,) = conn.execute("SELECT COUNT(*) FROM pattern_fingerprints").fetchone()
            (out_after,) = conn.execute("SELECT COUNT(*) FROM pattern_outcomes").fetchone()
        age = oldest if trigger in ("age_trim", "hard_cap_evict") else None
        return Eviction(trigger, int(fp_before), int(fp_after), int(out_before), int(out_after), len(ids), age)

    # --- reading ------------------------------------------------------------------------------

    def counts(self) -> tuple[int, int]:
        (fps,) = self.db.rows("SELECT COUNT(*) FROM pattern_fingerprints")[0]
        (outs,) = self.db.rows("SELECT COUNT(*) FROM pattern_outcomes")[0]
        return int(fps), int(outs)

    def fingerprints(self, limit: int | None = None) -> list[StoredFingerprint]:
        sql = "SELECT id, features_json, embedding_json, created_at, last_seen_at FROM pattern_fingerprints " \
              "ORDER BY last_seen_at DESC"
        rows = self.db.rows(sql + (" LIMIT ?" if limit else ""), (limit,) if limit else ())
        return [StoredFingerprint(r[0], Fingerprint(in_feature_order(orjson.loads(r[1])),
                                                    tuple(orjson.loads(r[2])) if r[2] else None), r[3], r[4])
                for r in rows]

    def get(self, fingerprint_id: str) -> StoredFingerprint | None:
        return next((f for f in self.fingerprints() if f.id == fingerprint_id), None)

    def neighbors(self, fp: Fingerprint, k: int, max_distance: float) -> list[tuple[StoredFingerprint, float]]:
        scored = [(stored, distance(fp, stored.fingerprint)) for stored in self.fingerprints()]
        near = sorted((s for s in scored if s[1] <= max_distance), key=lambda s: (s[1], s[0].id))
        return near[:k]

    def outcomes(self, fingerprint_ids: list[str]) -> list[Outcome]:
        if not fingerprint_ids:
            return []
        marks = ", ".join("?" * len(fingerprint_ids))
        return self._outcomes(f"o.fingerprint_id IN ({marks})", fingerprint_ids)

    def latest_outcomes(self, model: str, limit: int) -> list[Outcome]:
        """`model`'s latest `limit` outcomes on any turn, newest first (what its change test reads)."""
        return self._outcomes("o.model = ? AND o.score IS NOT NULL", (model,), "o.recorded_at DESC, o.id DESC", limit)

    def outcomes_of_turn(self, turn_id: str) -> list[Outcome]:
        return self._outcomes("o.turn_id = ?", (turn_id,))

    def _outcomes(self, where: str, params: Any, order: str = "o.id", limit: int | None = None) -> list[Outcome]:
        # a replay session (its replay_of set) ran a stored turn again: its outcome is learned evidence
        rows = self.db.rows(
            "SELECT o.fingerprint_id, o.model, o.score, o.cost_usd, o.latency_ms, o.recorded_at, "
            "CASE WHEN s.replay_of IS NULL THEN 'observed' ELSE 'learned' END, o.session_id, o.turn_id "
            f"FROM pattern_outcomes o LEFT JOIN sessions s ON s.id = o.session_id WHERE {where} ORDER BY {order}"
            + (f" LIMIT {int(limit)}" if limit is not None else ""), params)
        return [Outcome(r[0], r[1], r[2], Decimal(r[3]), r[4], int(r[5]), str(r[6]), str(r[7]), str(r[8]))
                for r in rows]
