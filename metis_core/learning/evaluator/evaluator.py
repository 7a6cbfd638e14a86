"""`Evaluator`: score one subject by its rubric and put the verdict on the record.

eval.started → eval.completed (verdict appended to eval_verdicts) | eval.failed with the failure
mode. The heuristic judge always runs; the LLM judge runs when the rubric asks for llm/hybrid,
a judge model is configured and today's judge spend is under the cap (otherwise the verdict is
heuristic with `signals.llm_skipped` saying why). Nothing here raises into the caller: every
failure is an eval.failed (a store failure, such as a lost connection, also logged as a warning),
so a turn is never broken by its evaluation.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from metis_core.errors import EvaluationError, MetisError, StoreError
from metis_core.events.bus import EventBus
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor, Event
from metis_core.events.payloads.evaluation import RATIONALE_SIGNAL
from metis_core.events.redaction import redact
from metis_core.ids import new_ulid
from metis_core.learning.evaluator.heuristic import HeuristicVerdict, judge_session, judge_tool_cycle, judge_turn
from metis_core.learning.evaluator.llm_judge import LlmJudge, LlmVerdict
from metis_core.learning.evaluator.rubrics import JudgeKind, Rubric, RubricBook, SubjectKind
from metis_core.learning.evaluator.subjects import FEEDBACK_TYPES, Subject, SubjectReader, with_feedback
from metis_core.learning.evaluator.verdicts import Verdict, VerdictStore

log = logging.getLogger("metis_core.learning")
Trigger = str  # "bus" | "batch" | "feedback_arrived" | "benchmark"


@dataclass
class EvaluatorSettings:
    judge_daily_cap_usd: Decimal = Decimal("0.50")
    capture_rationale: bool = False


class Evaluator:
    def __init__(
        self,
        bus: EventBus,
        reader: SubjectReader,
        verdicts: VerdictStore,
        rubrics: RubricBook,
        judge: LlmJudge | None = None,
        settings: EvaluatorSettings | None = None,
    ) -> None:
        self.bus = bus
        self.reader = reader
        self.verdicts = verdicts
        self.rubrics = rubrics
        self.judge = judge
        self.settings = settings or EvaluatorSettings()
        self._unstored_spend: dict[str, Decimal] = {}
        """UTC day -> what this process's judge attempts cost without a verdict to store it on."""

    def evaluate(
        self, kind: SubjectKind, subject_id: str, *, trigger: Trigger, parent: Event | None = None,
        session_id: str | None = None, feedback: tuple[Event, ...] = (),
    ) -> Verdict | None:
        """Score one subject; the verdict, or None when the evaluation failed (eval.failed). `feedback`:
        feedback on it the caller has seen that the trace may not hold yet (as a feedback `parent`)."""
        eval_id = new_ulid()
        started_clock = time.perf_counter()
        session = session_id or (parent.session_id if parent is not None else None) or (
            subject_id if kind == "session" else SYSTEM_SESSION_ID)
        turn_id = subject_id if kind == "turn" else (parent.turn_id if parent is not None else None)
        rubric: Rubric | None = None
        rubric_error: EvaluationError | None = None
        try:
            rubric = self.rubrics.for_subject(kind)
        except EvaluationError as error:
            rubric_error = error
        planned = self._planned(rubric)
        started = self._emit("eval.started", {
            "eval_id": eval_id, "subject_kind": kind, "subject_id": subject_id,
            "rubric_id": rubric.id if rubric else self.rubrics.default_id(kind),
            "rubric_version": rubric.version if rubric else "unloadable",
            "judge_kind_planned": planned, "trigger": trigger,
        }, session, turn_id, parent)
        try:
            if rubric_error is not None:
                raise rubric_error
            assert rubric is not None
            subject = self.reader.read(kind, subject_id)
            for seen in (parent, *feedback) if parent is not None and parent.type in FEEDBACK_TYPES else feedback:
                subject = with_feedback(subject, seen)
            verdict, pricing_version, latency_ms = self._judge(eval_id, subject, rubric, planned, trigger)
        except EvaluationError as error:
            message = str(error)
            spent = getattr(error, "cost_usd", Decimal(0))
            if spent > 0:  # the judge's failed attempts still count against the daily cap
                today = datetime.now(UTC).strftime("%Y-%m-%d")
                self._unstored_spend[today] = self._unstored_spend.get(today, Decimal(0)) + spent
                message += f" (the judge's attempts cost {spent} USD)"
            self._failed(eval_id, kind, subject_id, error.failure_mode, message, started_clock, session,
                         turn_id, started)
            return None
        except MetisError as error:  # a locked, damaged or unreachable store: the judge could not run
            self._failed(eval_id, kind, subject_id, "judge_call_failed", str(error), started_clock, session,
                         turn_id, started, store_error=isinstance(error, StoreError))
            return None
        try:
            self.verdicts.append(verdict)
        except StoreError as error:  # e.g. the connection dropped: the verdict's transaction was rolled back
            self._failed(eval_id, kind, subject_id, "judge_call_failed", f"verdict not stored: {error}",
                         started_clock, session, turn_id, started, store_error=True)
            return None
        self._emit("eval.completed", {
            "eval_id": eval_id, "subject_kind": kind, "subject_id": subject_id, "score": verdict.score,
            "confidence": verdict.confidence, "judge_kind": verdict.judge_kind, "judge_model": verdict.judge_model,
            "judge_cost_usd": str(verdict.judge_cost_usd), "judge_pricing_version": pricing_version,
            "judge_latency_ms": latency_ms, "rubric_id": verdict.rubric_id,
            "rubric_version": verdict.rubric_version, "signals": verdict.signals, "parent_eval_id": None,
        }, subject.session_id, turn_id, started)
        return verdict

    # --- judging ------------------------------------------------------------------------------

    def _planned(self, rubric: Rubric | None) -> JudgeKind:
        if rubric is None or rubric.judge == "heuristic" or self.judge is None:
            return "heuristic"
        return rubric.judge

    def _judge(
        self, eval_id: str, subject: Subject, rubric: Rubric, planned: JudgeKind, trigger: str
    ) -> tuple[Verdict, str | None, int]:
        """(verdict, judge pricing version, judge latency in ms)."""
        heuristic = self._heuristic(subject)
        pricing_version: str | None = None
        latency_ms = 0
        signals: dict[str, Any] = {"heuristic": heuristic.signals}
        score, confidence, kind, model, cost = heuristic.score, heuristic.confidence, "heuristic", None, Decimal(0)
        if planned != "heuristic" and subject.kind == "turn" and self.judge is not None:
            skipped = self._over_cap()
            if skipped:
                signals["llm_skipped"] = "daily_cap"
            else:
                llm = self._llm(subject, rubric)
                model, cost, kind = llm.model, llm.cost_usd, planned
                signals["criteria"] = llm.answer.criteria
                signals["llm_score"] = llm.answer.score  # the judge's own score, before blending
                pricing_version, latency_ms = llm.pricing_version if cost > 0 else None, llm.latency_ms
                if self.settings.capture_rationale and llm.answer.rationale:
                    signals[RATIONALE_SIGNAL] = redact(llm.answer.rationale, 1000)
                if planned == "llm":
                    score, confidence = llm.answer.score, llm.answer.confidence
                else:  # hybrid: each judge weighted by its own confidence
                    weight = heuristic.confidence + llm.answer.confidence or 1.0
                    score = (heuristic.score * heuristic.confidence + llm.answer.score * llm.answer.confidence) / weight
                    confidence = max(heuristic.confidence, llm.answer.confidence)
        verdict = Verdict(eval_id, subject.kind, subject.id, subject.session_id, rubric.id, rubric.version, kind,
                          model, round(score, 4), round(confidence, 4), cost, signals, trigger)
        return verdict, pricing_version, latency_ms

    def _heuristic(self, subject: Subject) -> HeuristicVerdict:
        if subject.kind == "turn":
            answer = None
            with contextlib.suppress(EvaluationError):  # no text to check for a refusal: events alone
                answer = self.reader.turn_text(subject)[1]
            return judge_turn(subject.events, subject.feedback, answer)
        if subject.kind == "session":
            return judge_session(subject.turns, subject.feedback, self._current_turn_verdicts(subject))
        return judge_tool_cycle(subject.events)

    def _current_turn_verdicts(self, subject: Subject) -> dict[str, tuple[float, float]]:
        """(score, confidence) of each turn's latest verdict (the LLM judge's part included) that no
        feedback on the turn has come after; other turns are judged afresh from the record."""
        current: dict[str, tuple[float, float]] = {}
        for turn_id in subject.turns:
            verdict = self.verdicts.latest("turn", turn_id)
            latest_feedback = max((e.id for e in subject.feedback if e.payload.get("subject_turn_id") == turn_id),
                                  default="")
            if verdict is not None and verdict.eval_id > latest_feedback:
                current[turn_id] = (verdict.score, verdict.confidence)
        return current

    def _llm(self, subject: Subject, rubric: Rubric) -> LlmVerdict:
        assert self.judge is not None
        user_text, answer = self.reader.turn_text(subject)
        return self.judge.judge(rubric, user_text, answer)

    def _over_cap(self) -> bool:
        midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        unstored = self._unstored_spend.get(midnight.strftime("%Y-%m-%d"), Decimal(0))
        return self.verdicts.judge_spend_since(midnight) + unstored >= self.settings.judge_daily_cap_usd

    # --- events -------------------------------------------------------------------------------

    def _failed(self, eval_id: str, kind: str, subject_id: str, mode: str, message: str, started_clock: float,
                session: str, turn_id: str | None, parent: Event | None, *, store_error: bool = False) -> None:
        # a store failure is the operator's business (a warning); a bad rubric or judge answer is routine
        log.log(logging.WARNING if store_error else logging.INFO, "evaluation %s of %s %s failed (%s): %s",
                eval_id, kind, subject_id, mode, message)
        self._emit("eval.failed", {
            "eval_id": eval_id, "subject_kind": kind, "subject_id": subject_id, "failure_mode": mode,
            "error_message": redact(message, 1000),
            "judge_latency_ms": int((time.perf_counter() - started_clock) * 1000),
        }, session, turn_id, parent)

    def _emit(self, event_type: str, payload: dict[str, Any], session: str, turn_id: str | None,
              parent: Event | None) -> Event | None:
        return self.bus.emit_new(event_type, payload, session_id=session, turn_id=turn_id, parent=parent,
                                 actor=Actor.SYSTEM)
