"""A session's recorded events and stored messages, read once and indexed for the exporters.

Events and messages are correlated by id order: both are monotonic ULIDs from one generator, so
the assistant message persisted during an LLM call sorts between that call's `llm.call_started`
and the event that closed it, and the history a request carried is every message before it.
Nothing here knows an export format, and nothing is written.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal

from metis_core.events.envelope import SYSTEM_SESSION_ID, Event
from metis_core.messages import Message, Role, ToolResultBlock, ToolUseBlock
from metis_core.store.records import SessionRecord
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

TURN_ENDINGS = frozenset({"turn.completed", "turn.cancelled"})


@dataclass
class TurnEvents:
    """The events of one turn in id order; `started` is None when retention pruned it."""

    turn_id: str
    started: Event | None = None
    ended: Event | None = None
    events: list[Event] = field(default_factory=list)


class MessageIndex:
    """Stored messages by id order, tool_use blocks by id and tool results by the id they answer."""

    def __init__(self, messages: Iterable[Message]) -> None:
        self.messages = sorted(messages, key=lambda m: m.id)
        self._ids = [m.id for m in self.messages]
        self._tool_uses: dict[str, ToolUseBlock] = {}
        self._tool_results: dict[str, ToolResultBlock] = {}
        for message in self.messages:
            for use in message.tool_uses():
                self._tool_uses[use.id] = use
            for result in message.tool_results():
                self._tool_results[result.tool_use_id] = result

    def before(self, event_id: str) -> list[Message]:
        """Every message stored before the event: the history a request made then carried."""
        return self.messages[: bisect_left(self._ids, event_id)]

    def last_between(self, after_id: str, before_id: str | None, role: Role) -> Message | None:
        """The last message of `role` stored after one event and before another (None = to the end)."""
        start = bisect_left(self._ids, after_id)
        stop = len(self._ids) if before_id is None else bisect_left(self._ids, before_id)
        for message in reversed(self.messages[start:stop]):
            if message.role is role:
                return message
        return None

    def user_message_before(self, event_id: str) -> Message | None:
        """The last user message stored before an event (a turn's own message precedes turn.started)."""
        for message in reversed(self.before(event_id)):
            if message.role is Role.USER:
                return message
        return None

    def tool_use(self, tool_use_id: str) -> ToolUseBlock | None:
        return self._tool_uses.get(tool_use_id)

    def tool_result(self, tool_use_id: str) -> ToolResultBlock | None:
        return self._tool_results.get(tool_use_id)


class SessionRecording:
    """One session as stored: its record, its events (id order) and its canonical messages."""

    def __init__(self, session: SessionRecord, events: Iterable[Event], messages: MessageIndex) -> None:
        self.session = session
        self.events: tuple[Event, ...] = tuple(sorted(events, key=lambda e: e.id))
        self.messages = messages
        self._by_id = {event.id: event for event in self.events}
        self.parent_run_id: str | None = None
        """A delegated worker session's: the planner turn whose delegate.started opened it."""

    @property
    def session_id(self) -> str:
        return self.session.id

    def event(self, event_id: str | None) -> Event | None:
        return None if event_id is None else self._by_id.get(event_id)

    def ancestors(self, event: Event) -> Iterable[Event]:
        """The event's causes, nearest first, following parent_event_id while the parent is known."""
        seen = {event.id}
        parent = self.event(event.parent_event_id)
        while parent is not None and parent.id not in seen:
            seen.add(parent.id)
            yield parent
            parent = self.event(parent.parent_event_id)

    def turns(self) -> list[TurnEvents]:
        """The session's turns in the order they started, each with its events."""
        turns: dict[str, TurnEvents] = {}
        for event in self.events:
            if event.turn_id is None:
                continue
            turn = turns.setdefault(event.turn_id, TurnEvents(event.turn_id))
            turn.events.append(event)
            if event.type == "turn.started" and turn.started is None:
                turn.started = event
            elif event.type in TURN_ENDINGS and turn.ended is None:
                turn.ended = event
        return list(turns.values())


def system_record(events: list[Event]) -> SessionRecord:
    """A stand-in record for the `system` pseudo-session, spanning its events."""
    first = events[0].timestamp if events else datetime.now(UTC)
    last = events[-1].timestamp if events else first
    return SessionRecord(
        id=SYSTEM_SESSION_ID, workspace_path="", active_model=None, routing_policy=None, tool_id_map={},
        title="system events", schema_version=0, created_at=first, updated_at=last, ended_at=None,
        disposition=None, total_cost_usd=Decimal(0), unpriced_message_count=0, total_input_tokens=0,
        total_output_tokens=0,
    )


def load_recording(session_id: str, sessions: SessionStore, trace: TraceStore) -> SessionRecording:
    """Read a session's record, events and messages. SessionNotFoundError if the id is unknown.

    The `system` session (sweeps, key and policy changes) has events but no stored record and no
    messages; it gets a record made from its events so every format can export it.
    """
    events = trace.replay(session_id)
    if session_id == SYSTEM_SESSION_ID:
        return SessionRecording(system_record(events), events, MessageIndex([]))
    record = sessions.get_session(session_id)
    recording = SessionRecording(record, events, MessageIndex(sessions.load_messages(session_id)))
    if record.parent_session_id is not None:
        recording.parent_run_id = next(
            (e.turn_id for e in trace.events(session_id=record.parent_session_id, types=["delegate.started"])
             if e.payload.get("worker_session_id") == session_id), None)
    return recording

