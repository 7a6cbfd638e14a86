"""When a session ends, each finished turn becomes a pattern outcome (pattern.recorded).

One batch subscriber rebuilds each turn's fingerprint from the record, takes its score from the
evaluator's latest verdict, its cost and latency from llm.call_completed, and writes it (then cap
and age evictions, pattern.evicted). A later verdict on a recorded turn (feedback or an implicit
signal after the end, `metis eval run --again`) rescores its outcome, recorded again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal

from metis_core.errors import MetisError
from metis_core.events.bus import EventBus, EventFilter, Subscription
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor, Event
from metis_core.hashing import sha256_hex
from metis_core.learning.evaluator.evaluator import Evaluator
from metis_core.learning.evaluator.subjects import concerns_turn
from metis_core.learning.patterns.fingerprint import Embedder, Fingerprint, fingerprint
from metis_core.learning.patterns.store import Eviction, PatternStore, Rescored
from metis_core.messages import Role
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

log = logging.getLogger("metis_core.learning")
EARLY_SIGNALS_HELD = 1_000
"""Implicit signals on turns not yet recorded that the recorder holds at most."""
SUBSCRIPTION_NAME = "learning-pattern-recorder"


class PatternRecorder:
    def __init__(self, bus: EventBus, trace: TraceStore, store: SessionStore, patterns: PatternStore,
                 evaluator: Evaluator, embed: Embedder | None = None) -> None:
        self.bus = bus
        self.trace = trace
        self.store = store
        self.patterns = patterns
        self.evaluator = evaluator
        self.embed = embed
        self.skip: Callable[[str], bool] | None = None
        """Sessions recorded by their owner instead (verification replays, once their judge scored them)."""
        self._early: dict[str, Event] = {}
        """Turn id -> the latest implicit signal on it that came before its outcome was recorded: read at
        the end with the trace's, which may not hold it yet (its writer runs on a thread of its own)."""

    def subscription(self) -> Subscription:
        return Subscription(filter=EventFilter(event_types={"session.ended", "eval.completed", "feedback.implicit",
                                                         "feedback.explicit"}),
                            handler=self.handle, name=SUBSCRIPTION_NAME)

    def handle(self, event: Event) -> None:
        if event.type != "eval.completed" and self.skip is not None and self.skip(event.session_id):
            return
        try:
            if event.type == "session.ended":
                self.record_session(event)
            elif event.type == "eval.completed" and event.payload.get("subject_kind") == "turn":
                self.rescore_turn(str(event.payload["subject_id"]))
            elif event.type == "feedback.implicit" and event.payload.get("subject_turn_id"):
                self.implicit_arrived(event)
            elif event.type == "feedback.explicit" and event.payload.get("scope") == "session":
                self.session_rated(event)
        except MetisError as error:
            log.warning("patterns of session %s not recorded: %s", event.session_id, error)

    def implicit_arrived(self, signal: Event) -> None:
        """An implicit signal on a turn already recorded (`abandon` comes after session.ended):
        re-evaluate it; its eval.completed rescores the outcome. Earlier signals are read at the end."""
        turn_id = str(signal.payload["subject_turn_id"])
        if self.patterns.is_recorded(turn_id):
            self.evaluator.evaluate("turn", turn_id, trigger="feedback_arrived", parent=signal)
        else:
            if len(self._early) >= EARLY_SIGNALS_HELD:  # turns that never finish are not held for ever
                self._early.clear()
            self._early[turn_id] = signal

    def session_rated(self, rating: Event) -> None:
        """A rating of a whole session already recorded covers its turns: re-evaluate each of them
        (a turn rating goes through the evaluator's own trigger)."""
        for turn_id in self.patterns.turns_of_session(rating.session_id):
            self.evaluator.evaluate("turn", turn_id, trigger="feedback_arrived", parent=rating)

    def rescore_turn(self, turn_id: str) -> list[Event]:
        """Give a recorded turn's outcomes its latest verdict's score; the pattern.recorded events."""
        verdict = self.evaluator.verdicts.latest("turn", turn_id)
        if verdict is None:
            return []
        emitted = [self._rescored(turn_id, r, verdict.score) for r in self.patterns.rescore(turn_id, verdict.score)]
        return [e for e in emitted if e is not None]

    def _rescored(self, turn_id: str, rescored: Rescored, score: float) -> Event | None:
        ended = self.trace.events(session_id=rescored.session_id, types=("session.ended",))
        return self.bus.emit_new("pattern.recorded", {
            "fingerprint_id": rescored.fingerprint_id, "fingerprint_kind": rescored.fingerprint_kind,
            "primary_model": rescored.model, "sample_size_before": rescored.sample_size,
            "sample_size_after": rescored.sample_size, "was_new_fingerprint": False, "success_score": score,
            "cost_usd_at_record": str(rescored.cost_usd), "pricing_version": rescored.pricing_version,
            "over_soft_cap": False,
        }, session_id=rescored.session_id, turn_id=turn_id, parent=ended[-1] if ended else None, actor=Actor.SYSTEM)

    def record_session(self, ended: Event) -> list[Event]:
        """Record every finished turn of the session that `ended` closes; the pattern.recorded events."""
        events = self.trace.events(session_id=ended.session_id)
        created = next((e for e in events if e.type == "session.created"), None)
        workspace = str(created.payload.get("workspace_path", "")) if created is not None else ""
        texts = {sha256_hex(m.text()): m.text() for m in self.store.load_messages(ended.session_id)
                 if m.role is Role.USER}
        recorded: list[Event] = []
        tools_before: set[str] = set()
        for started in [e for e in events if e.type == "turn.started"]:
            turn = [e for e in events if e.turn_id == started.turn_id]
            tools_now = {str(e.payload.get("tool_name")) for e in turn if e.type == "tool.called"}
            calls = [e for e in turn if e.type == "llm.call_completed"]
            completed = any(e.type == "turn.completed" for e in turn)
            if completed and calls and started.turn_id is not None:
                fp = fingerprint(
                    texts.get(str(started.payload.get("user_message_hash")), ""),
                    estimated_tokens=int(started.payload.get("estimated_input_tokens", 0)),
                    has_images=bool(started.payload.get("has_images")), workspace=workspace,
                    tools_used=sorted(tools_before), embed=self.embed)
                event = self._record(ended, started.turn_id, fp, calls, turn)
                if event is not None:
                    recorded.append(event)
            tools_before |= tools_now
        self._evictions(recorded)
        return recorded

    def _score(self, ended: Event, turn_id: str, turn: list[Event]) -> float | None:
        feedback = self.trace.events(session_id=ended.session_id, types=("feedback.explicit", "feedback.implicit"))
        early = self._early.pop(turn_id, None)
        seen = (early,) if early is not None else ()
        latest_feedback = max((e.id for e in (*feedback, *seen) if concerns_turn(e, turn_id)), default="")
        verdict = self.evaluator.verdicts.latest("turn", turn_id)
        if verdict is None or verdict.eval_id < latest_feedback:
            verdict = self.evaluator.evaluate("turn", turn_id, trigger="bus", parent=ended, feedback=seen)
        return verdict.score if verdict is not None else None

    def _record(
        self, ended: Event, turn_id: str, fp: Fingerprint, calls: list[Event], turn: list[Event]
    ) -> Event | None:
        model = str(calls[-1].payload["model"])
        cost = sum((Decimal(str(e.payload.get("cost_usd", 0))) for e in calls), Decimal(0))
        latency = sum(int(e.payload.get("latency_ms", 0)) for e in calls)
        version = str(calls[-1].payload.get("pricing_version", "unpriced"))
        score = self._score(ended, turn_id, turn)
        result = self.patterns.record(fp, session_id=ended.session_id, turn_id=turn_id, model=model, score=score,
                                      cost_usd=cost, latency_ms=latency, pricing_version=version)
        return self.bus.emit_new("pattern.recorded", {
            "fingerprint_id": result.fingerprint_id, "fingerprint_kind": fp.kind, "primary_model": model,
            "sample_size_before": result.sample_size_before, "sample_size_after": result.sample_size_after,
            "was_new_fingerprint": result.was_new, "success_score": score, "cost_usd_at_record": str(cost),
            "pricing_version": version, "over_soft_cap": result.over_soft_cap,
        }, session_id=ended.session_id, turn_id=turn_id, parent=ended, actor=Actor.SYSTEM)

    def _evictions(self, recorded: list[Event]) -> None:
        capped = self.patterns.enforce_caps()
        if capped is not None:
            self.emit_eviction(capped, ended_session=recorded[-1].session_id if recorded else None,
                               parent=recorded[-1] if recorded else None)
        trimmed = self.patterns.age_trim()
        if trimmed is not None and trimmed.entries_evicted:
            self.emit_eviction(trimmed, ended_session=recorded[-1].session_id if recorded else None, parent=None)

    def emit_eviction(self, eviction: Eviction, *, ended_session: str | None, parent: Event | None) -> Event | None:
        return self.bus.emit_new("pattern.evicted", eviction.payload(), session_id=ended_session or SYSTEM_SESSION_ID,
                                 parent=parent, actor=Actor.SYSTEM)
