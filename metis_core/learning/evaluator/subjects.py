"""What an evaluation looks at: the subject's events from the trace, its feedback, its text.

A turn is found by its turn id, a session by its id, a tool cycle by the id of its tool.called
event. Nothing found is EvalSubjectNotFoundError (eval.failed `subject_not_found`). Text (the
user's message and the answer) is read from the message store only for the LLM judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from metis_core.errors import EvalSubjectNotFoundError, SessionNotFoundError
from metis_core.events.envelope import Event
from metis_core.hashing import sha256_hex
from metis_core.learning.evaluator.rubrics import SubjectKind
from metis_core.messages import Role
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

FEEDBACK_TYPES = ("feedback.explicit", "feedback.implicit")


def concerns_turn(feedback: Event, turn_id: str) -> bool:
    """Feedback on the turn itself, or a rating of its whole session (which covers every turn)."""
    return feedback.payload.get("subject_turn_id") == turn_id or (
        feedback.type == "feedback.explicit" and feedback.payload.get("scope") == "session")


@dataclass
class Subject:
    kind: SubjectKind
    id: str
    session_id: str
    events: list[Event]
    feedback: list[Event] = field(default_factory=list)
    turns: dict[str, list[Event]] = field(default_factory=dict)
    """For a session: each turn's events, keyed by turn id, in order."""

    @property
    def model(self) -> str | None:
        """The model that answered last (from llm.call_completed)."""
        calls = [e for e in self.events if e.type == "llm.call_completed"]
        return str(calls[-1].payload["model"]) if calls else None


def with_feedback(subject: Subject, feedback: Event) -> Subject:
    """`subject` with `feedback` among its feedback when it concerns the subject and the trace did not
    hold it yet: the feedback that asked for this evaluation reaches the evaluator's subscriber on a
    thread of its own, and may get there before the trace writer has stored it."""
    concerns = (concerns_turn(feedback, subject.id) if subject.kind == "turn"
                else subject.kind == "session" and feedback.session_id == subject.id)
    if not concerns or any(e.id == feedback.id for e in subject.feedback):
        return subject
    subject.feedback = sorted([*subject.feedback, feedback], key=lambda e: e.id)
    return subject


class SubjectReader:
    def __init__(self, trace: TraceStore, store: SessionStore) -> None:
        self.trace = trace
        self.store = store

    def read(self, kind: SubjectKind, subject_id: str) -> Subject:
        if kind == "turn":
            events = self.trace.events(turn_id=subject_id)
            if not any(e.type == "turn.started" for e in events):
                raise EvalSubjectNotFoundError(f"no turn {subject_id} in the trace")
            session_id = events[0].session_id
            feedback = [e for e in self.trace.events(session_id=session_id, types=FEEDBACK_TYPES)
                        if concerns_turn(e, subject_id)]
            return Subject(kind, subject_id, session_id, events, feedback)
        if kind == "session":
            events = self.trace.events(session_id=subject_id)
            if not any(e.type == "turn.started" for e in events):
                raise EvalSubjectNotFoundError(f"no session {subject_id} with turns in the trace")
            turns: dict[str, list[Event]] = {}
            for event in events:
                if event.turn_id is not None and event.type not in FEEDBACK_TYPES:
                    turns.setdefault(event.turn_id, []).append(event)
            feedback = [e for e in events if e.type in FEEDBACK_TYPES]
            return Subject(kind, subject_id, subject_id, events, feedback, turns)
        if kind == "tool_cycle":
            called = self.trace.get(subject_id)
            if called is None or called.type != "tool.called":
                raise EvalSubjectNotFoundError(f"no tool.called event {subject_id} in the trace")
            children = [e for e in self.trace.events(turn_id=called.turn_id) if e.parent_event_id == called.id]
            return Subject(kind, subject_id, called.session_id, [called, *children])
        raise EvalSubjectNotFoundError(f"{kind} subjects are judged by the benchmark, not from the trace")

    def turn_text(self, subject: Subject) -> tuple[str, str]:
        """(user message, answer) of a turn subject, for the LLM judge."""
        started = next(e for e in subject.events if e.type == "turn.started")
        try:
            messages = self.store.load_messages(subject.session_id)
        except SessionNotFoundError as error:
            raise EvalSubjectNotFoundError(str(error)) from None
        wanted = started.payload.get("user_message_hash")
        index = next((i for i in range(len(messages) - 1, -1, -1)
                      if messages[i].role is Role.USER and sha256_hex(messages[i].text()) == wanted), None)
        if index is None:
            raise EvalSubjectNotFoundError(f"the messages of turn {subject.id} are not in the store")
        answer: list[str] = []
        for message in messages[index + 1:]:
            if message.role is Role.USER:
                break
            if message.role is Role.ASSISTANT and message.text():
                answer.append(message.text())
        return messages[index].text(), "\n\n".join(answer)
