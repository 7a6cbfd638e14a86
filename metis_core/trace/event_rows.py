"""An `Event` to an `events` row and back (event-bus-and-trace-catalog §7.1).

Inserts ignore an id already stored, so writing an event twice is harmless (spec §5.1 dedupe).
The payload is stored as compact JSON; catalog events already carry JSON-mode payloads, and a
hand-built payload holding datetimes or Decimals is written with their ISO / string forms.
No SQL beyond the column list lives here; the trace store runs the statements.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from metis_core.events.envelope import Actor, Event, Sensitivity, datetime_from_us

EVENT_COLUMNS = "id, timestamp_us, session_id, turn_id, parent_event_id, type, actor, sensitivity, payload_json"
INSERT_EVENT = f"INSERT OR IGNORE INTO events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"

EventRow = tuple[str, int, str, str | None, str | None, str, str, str, str]


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def payload_json(payload: dict[str, Any]) -> str:
    return orjson.dumps(payload, default=_json_default).decode()


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ACTOR_TEXT = {actor: actor.value for actor in Actor}
_SENSITIVITY_TEXT = {level: level.value for level in Sensitivity}
"""Enum member -> its text: a dict lookup, where `.value` goes through the enum's Python descriptor."""


def event_row(event: Event) -> EventRow:
    # The fields read from the model's own storage: one attribute lookup instead of nine, each of which
    # goes through BaseModel's __getattr__ hook (the bus thread runs this for every event).
    fields = event.__dict__
    delta = fields["timestamp"] - _EPOCH  # `to_us`, inlined: a call into an interpreted module per event
    return (
        fields["id"],
        (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds,
        fields["session_id"],
        fields["turn_id"],
        fields["parent_event_id"],
        fields["type"],
        _ACTOR_TEXT[fields["actor"]],
        _SENSITIVITY_TEXT[fields["sensitivity"]],
        orjson.dumps(fields["payload"], default=_json_default).decode(),
    )


def event_fields(row: tuple[Any, ...]) -> dict[str, Any]:
    """A row of EVENT_COLUMNS as the event's fields: the timestamp a datetime, the payload decoded."""
    eid, ts, sid, turn, parent, etype, actor, sensitivity, payload = row
    return {
        "id": eid,
        "timestamp": datetime_from_us(ts),
        "session_id": sid,
        "turn_id": turn,
        "parent_event_id": parent,
        "type": etype,
        "actor": actor,
        "sensitivity": sensitivity,
        "payload": orjson.loads(payload),
    }


def event_from_row(row: tuple[Any, ...]) -> Event:
    return Event.model_validate(event_fields(row))
