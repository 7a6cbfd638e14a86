"""Explicit feedback: a thumbs up or down on a turn or a whole session (feedback.explicit).

`/good` and `/bad [comment]` in the chat, `metis feedback SESSION [TURN] up|down` and library
callers all come here. The target is resolved against the trace (a turn id, a 1-based turn
number, or the last turn), and the event is parented to the turn's closing event or to
session.ended. Evaluation of the rated subject follows on the bus (trigger feedback_arrived).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from metis_core.errors import FeedbackTargetError
from metis_core.events.bus import EventBus
from metis_core.events.envelope import Actor, Event
from metis_core.trace.store import TraceStore

Rating = Literal["thumbs_up", "thumbs_down"]
Scope = Literal["turn", "session"]
RATING_WORDS: dict[str, Rating] = {
    "up": "thumbs_up", "good": "thumbs_up", "+": "thumbs_up", "+1": "thumbs_up", "thumbs_up": "thumbs_up",
    "down": "thumbs_down", "bad": "thumbs_down", "-": "thumbs_down", "-1": "thumbs_down",
    "thumbs_down": "thumbs_down",
}  # fmt: skip
TURN_CLOSERS = ("turn.completed", "turn.cancelled")
MAX_COMMENT_CHARS = 2_000


def parse_rating(word: str) -> Rating:
    rating = RATING_WORDS.get(word.strip().lower())
    if rating is None:
        raise FeedbackTargetError(f"{word!r} is not a rating; use up or down")
    return rating


class FeedbackRecorder:
    """Emits feedback.explicit for targets it finds in the trace."""

    def __init__(self, bus: EventBus, trace: TraceStore) -> None:
        self.bus = bus
        self.trace = trace

    def rate(
        self,
        session_id: str,
        rating: Rating | str,
        *,
        turn: str | int | None = None,
        scope: Scope = "turn",
        comment: str | None = None,
    ) -> Event:
        """Rate one turn (`turn`: its id, its 1-based number, or None for the last) or the session."""
        value = parse_rating(rating)
        self._settle()
        events = self.trace.events(session_id=session_id, types=("turn.started", *TURN_CLOSERS, "session.ended"))
        if not events and not self.trace.events(session_id=session_id, limit=1):
            raise FeedbackTargetError(f"no session {session_id} in the trace; `metis sessions list` shows them")
        text = comment.strip()[:MAX_COMMENT_CHARS] if comment and comment.strip() else None
        if scope == "session":
            ended = [e for e in events if e.type == "session.ended"]
            closers = [e for e in events if e.type in TURN_CLOSERS]
            parent = ended[-1] if ended else (closers[-1] if closers else None)
            if parent is None:
                raise FeedbackTargetError(f"session {session_id} has no finished turn to rate yet")
            payload = {"scope": "session", "rating": value, "comment": text, "subject_turn_id": None,
                       "subject_session_id": session_id}
            return self._emit(payload, session_id, None, parent)
        closer = self._turn_closer(session_id, events, turn)
        payload = {"scope": "turn", "rating": value, "comment": text, "subject_turn_id": closer.turn_id,
                   "subject_session_id": session_id}
        return self._emit(payload, session_id, closer.turn_id, closer)

    def _turn_closer(self, session_id: str, events: list[Event], turn: str | int | None) -> Event:
        closers = {e.turn_id: e for e in events if e.type in TURN_CLOSERS}
        started = [e.turn_id for e in events if e.type == "turn.started"]
        if turn is None:
            finished = [t for t in started if t in closers]
            if not finished:
                raise FeedbackTargetError(f"session {session_id} has no finished turn to rate yet")
            return closers[finished[-1]]
        if isinstance(turn, int) or turn.isdigit():
            number = int(turn)
            if not 1 <= number <= len(started):
                raise FeedbackTargetError(
                    f"session {session_id} has {len(started)} turn(s), not {number}; "
                    f"`metis trace show {session_id}` lists them")
            turn = started[number - 1] or ""
        closer = closers.get(turn)
        if closer is None:
            raise FeedbackTargetError(f"no finished turn {turn} in session {session_id}; "
                                      f"`metis trace show {session_id}` lists its turns")
        return closer

    def _emit(self, payload: Mapping[str, object], session_id: str, turn_id: str | None, parent: Event) -> Event:
        event = self.bus.emit_new("feedback.explicit", payload, session_id=session_id, turn_id=turn_id,
                                  parent=parent, actor=Actor.USER)
        if event is None:  # lenient bus dropped it: the payload came from us, so this is a bug
            raise FeedbackTargetError("the feedback could not be recorded (see the log)")
        return event

    def _settle(self) -> None:
        """Make the events of the turn just finished visible before looking for it."""
        if not self.bus.closed:
            self.bus.flush()
        self.trace.flush()
