"""Implicit feedback: what the user's next move says about the last answer (feedback.implicit).

A batch bus subscriber reads each new turn's user message from the store and compares it with
the ones before it: very similar (`retry`), starting "no, actually ..." (`edit_followup`), or
moving on (`accept`). At session end, a last turn that failed or was cancelled is `abandon`.
`/model` right after a turn is `manual_swap` (a SessionManager swap listener). The payloads carry
ids, categories and numbers, never the user's text (the type's floor is pseudonymous).
"""

from __future__ import annotations

import difflib
import logging
import re
from typing import Any

from metis_core.errors import MetisError
from metis_core.events.bus import EventBus, EventFilter, Subscription
from metis_core.events.envelope import Actor, Event
from metis_core.hashing import sha256_hex
from metis_core.messages import Role
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

log = logging.getLogger("metis_core.learning")

RETRY_SIMILARITY = 0.8
RETRY_LOOKBACK = 3
CONFIDENCE = {"edit_followup": 0.7, "manual_swap": 0.6, "abandon": 0.6, "accept": 0.3}
"""Fixed confidences (docs/learning.md); `retry` scales from 0.5 to 0.9 with the similarity."""
EDIT_FOLLOWUP = re.compile(
    r"^\s*(?:(?P<no_actually>no+[,.!]?\s+(?:actually|wait|that'?s|i meant|not))"
    r"|(?P<thats_wrong>that'?s\s+(?:wrong|not\s+(?:right|what|it)|incorrect))"
    r"|(?P<actually>actually[,\s])|(?P<wrong>wrong[,.!\s])|(?P<not_quite>not\s+quite))",
    re.IGNORECASE,
)
TURN_CLOSERS = ("turn.completed", "turn.cancelled")


def similarity(a: str, b: str) -> float:
    """0..1 similarity of two messages, ignoring case and spacing."""
    left, right = " ".join(a.lower().split()), " ".join(b.lower().split())
    if not left or not right:
        return 0.0
    return difflib.SequenceMatcher(None, left, right, autojunk=False).ratio()


def edit_followup_kind(text: str) -> str | None:
    match = EDIT_FOLLOWUP.match(text)
    return match.lastgroup if match is not None else None


class ImplicitSignals:
    """Detects the five implicit signals and emits feedback.implicit for each."""

    def __init__(self, bus: EventBus, trace: TraceStore, store: SessionStore) -> None:
        self.bus = bus
        self.trace = trace
        self.store = store

    def subscription(self) -> Subscription:
        return Subscription(filter=EventFilter(event_types={"turn.started", "session.ended"}),
                            handler=self.handle, name="learning-implicit-feedback")

    def handle(self, event: Event) -> None:
        try:
            if event.type == "turn.started":
                self.on_turn_started(event)
            elif event.type == "session.ended":
                self.on_session_ended(event)
        except MetisError as error:  # a missing session or a locked file must not stop the subscriber
            log.warning("implicit feedback skipped for %s: %s", event.id, error)

    # --- the signals -------------------------------------------------------------------------

    def on_turn_started(self, event: Event) -> None:
        previous = self._previous_turn(event)
        if previous is None:
            return
        texts = [m.text() for m in self.store.load_messages(event.session_id) if m.role is Role.USER]
        wanted = event.payload.get("user_message_hash")
        index = next((i for i in range(len(texts) - 1, -1, -1) if sha256_hex(texts[i]) == wanted), None)
        if index is None or index == 0:
            return
        text, earlier = texts[index], texts[max(0, index - RETRY_LOOKBACK):index]
        kind = edit_followup_kind(text)
        if kind is not None:
            self._emit(event, "edit_followup", CONFIDENCE["edit_followup"], previous, {"pattern": kind},
                       turn_id=event.turn_id)
            return
        scores = [similarity(text, before) for before in earlier]
        best = max(scores, default=0.0)
        if best >= RETRY_SIMILARITY:
            turns_back = len(scores) - scores.index(best)
            confidence = 0.5 + 0.4 * (best - RETRY_SIMILARITY) / (1 - RETRY_SIMILARITY)
            self._emit(event, "retry", round(confidence, 3), previous,
                       {"similarity": round(best, 3), "turns_back": turns_back}, turn_id=event.turn_id)
            return
        closer = self._closer(event.session_id, previous)
        if closer is not None and _succeeded(closer):
            self._emit(event, "accept", CONFIDENCE["accept"], previous, {"evidence": "next_message_moved_on"},
                       turn_id=event.turn_id)

    def on_session_ended(self, event: Event) -> None:
        closers = self.trace.events(session_id=event.session_id, types=TURN_CLOSERS)
        if not closers:
            return
        last = closers[-1]
        if not _succeeded(last):
            reason = "cancelled" if last.type == "turn.cancelled" else "error"
            self._emit(event, "abandon", CONFIDENCE["abandon"], last.turn_id, {"last_turn": reason}, turn_id=None)
        elif event.payload.get("disposition") == "abandoned":
            self._emit(event, "abandon", 0.5, last.turn_id, {"last_turn": "completed"}, turn_id=None)

    def model_swapped(self, session_id: str, previous: str | None, new: str) -> Event | None:
        """`/model` right after a turn: the answer that turn gave was not what the user wanted."""
        try:
            if not self.bus.closed:
                self.bus.flush()
            self.trace.flush()
            events = self.trace.events(session_id=session_id, types=("turn.started", *TURN_CLOSERS,
                                                                      "llm.call_completed"))
        except MetisError as error:
            log.warning("manual_swap not recorded: %s", error)
            return None
        if not events or events[-1].type not in (*TURN_CLOSERS, "llm.call_completed"):
            return None
        closer = next((e for e in reversed(events) if e.type in TURN_CLOSERS), None)
        if closer is None:
            return None
        answered = next((e.payload.get("model") for e in reversed(events)
                         if e.type == "llm.call_completed" and e.turn_id == closer.turn_id), None)
        context = {"from_model": answered or previous, "to_model": new}
        return self._emit(closer, "manual_swap", CONFIDENCE["manual_swap"], closer.turn_id, context,
                          turn_id=closer.turn_id)

    # --- reading the record ----------------------------------------------------------------

    def _previous_turn(self, event: Event) -> str | None:
        started = self.trace.events(session_id=event.session_id, types=("turn.started",))
        earlier = [e.turn_id for e in started if e.id < event.id]
        return earlier[-1] if earlier else None

    def _closer(self, session_id: str, turn_id: str) -> Event | None:
        found = self.trace.events(session_id=session_id, turn_id=turn_id, types=TURN_CLOSERS, limit=1)
        return found[0] if found else None

    def _emit(self, parent: Event, kind: str, confidence: float, subject_turn_id: str | None,
              context: dict[str, Any], *, turn_id: str | None) -> Event | None:
        return self.bus.emit_new("feedback.implicit", {
            "type": kind, "confidence": confidence, "subject_turn_id": subject_turn_id, "context": context,
        }, session_id=parent.session_id, turn_id=turn_id, parent=parent, actor=Actor.SYSTEM)


def _succeeded(closer: Event) -> bool:
    if closer.type != "turn.completed":
        return False
    extra = closer.payload.get("signals_extra") or {}
    return not extra.get("error")
