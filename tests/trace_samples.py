"""Events for the trace tests: hand-built envelopes and valid catalog events for the bus."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from metis_core.events.catalog import make_event
from metis_core.events.envelope import Actor, Event, Sensitivity

TURN_STARTED = {
    "user_message_hash": "h",
    "estimated_input_tokens": 1,
    "has_images": False,
    "has_tool_calls_in_history": False,
}


def event(
    session_id: str = "sess_1",
    type: str = "turn.started",
    *,
    parent: Event | None = None,
    turn_id: str | None = None,
    at: datetime | None = None,
    payload: dict[str, Any] | None = None,
) -> Event:
    """A hand-built envelope (the store does not validate payloads)."""
    fields: dict[str, Any] = {}
    if at is not None:
        fields["timestamp"] = at
    return Event(
        session_id=session_id,
        type=type,
        actor=Actor.SYSTEM,
        turn_id=turn_id,
        parent_event_id=parent.id if parent else None,
        payload=payload or {"n": 1},
        sensitivity=Sensitivity.PSEUDONYMOUS,
        **fields,
    )


def chain(session_id: str, length: int) -> list[Event]:
    """Valid catalog events, each caused by the one before (turn.started payloads throughout)."""
    out: list[Event] = []
    for _ in range(length):
        out.append(make_event("turn.started", TURN_STARTED, session_id=session_id, parent=out[-1] if out else None))
    return out


def days_ago(days: float, now: datetime) -> datetime:
    return now - timedelta(days=days)


NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
