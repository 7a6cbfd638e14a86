"""When evaluations run: on the bus after a tool call, turn or session ends, when feedback arrives,
and in batch.

The bus subscriber is a batch subscriber (its own worker thread), never the fast path: it reads
the trace and may call a judge model. `run_batch` scores the turns and sessions finished since a
moment that have no verdict yet (`metis eval run [--since]`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from metis_core.events.bus import EventFilter, Subscription
from metis_core.events.envelope import Event
from metis_core.learning.evaluator.evaluator import Evaluator
from metis_core.learning.evaluator.rubrics import SubjectKind
from metis_core.learning.evaluator.verdicts import Verdict
from metis_core.trace.store import TraceStore

log = logging.getLogger("metis_core.learning")
SUBSCRIPTION_NAME = "learning-evaluator"


class EvaluationTriggers:
    def __init__(self, evaluator: Evaluator, trace: TraceStore) -> None:
        self.evaluator = evaluator
        self.trace = trace
        self.skip: Callable[[str], bool] | None = None
        """Sessions whose turns another judge scores (verification replays): not evaluated here."""

    def subscription(self) -> Subscription:
        wanted = {"turn.completed", "session.ended", "feedback.explicit", "tool.completed", "tool.failed"}
        return Subscription(filter=EventFilter(event_types=wanted), handler=self.handle, name=SUBSCRIPTION_NAME)

    def handle(self, event: Event) -> None:
        try:
            if event.type == "turn.completed" and event.turn_id is not None:
                if self.skip is not None and self.skip(event.session_id):
                    return
                self.evaluator.evaluate("turn", event.turn_id, trigger="bus", parent=event)
            elif event.type in ("tool.completed", "tool.failed") and event.parent_event_id is not None:
                self.evaluator.evaluate("tool_cycle", event.parent_event_id, trigger="bus", parent=event)
            elif event.type == "session.ended":
                self.evaluator.evaluate("session", event.session_id, trigger="bus", parent=event)
            elif event.type == "feedback.explicit":
                if event.payload.get("scope") == "turn" and event.payload.get("subject_turn_id"):
                    self.evaluator.evaluate("turn", str(event.payload["subject_turn_id"]), trigger="feedback_arrived",
                                            parent=event)
                else:
                    self.evaluator.evaluate("session", event.session_id, trigger="feedback_arrived", parent=event)
        except Exception as error:  # never let an evaluation take the subscriber down
            log.warning("evaluation after %s %s failed unexpectedly: %r", event.type, event.id, error)

    def run_batch(self, since: datetime | None = None, *, again: bool = False) -> list[Verdict | None]:
        """Score finished turns and sessions since `since` that have no verdict (all of them with `again`)."""
        results: list[Verdict | None] = []
        closers = self.trace.events(types=("turn.completed", "session.ended"), since=since)
        for event in closers:
            kind: SubjectKind = "turn" if event.type == "turn.completed" else "session"
            subject_id = event.turn_id if kind == "turn" else event.session_id
            if subject_id is None:
                continue
            if not again and self.evaluator.verdicts.latest(kind, subject_id) is not None:
                continue
            results.append(self.evaluator.evaluate(kind, subject_id, trigger="batch", parent=event))
        return results
