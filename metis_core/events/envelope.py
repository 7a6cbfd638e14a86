"""The event envelope (event-bus-and-trace-catalog §4): identity, scope, causality, type, payload.

Every event on the bus has this shape. The payload is a plain dict validated against the catalog
(`metis_core.events.catalog`); this module only defines the envelope and its JSON form, so the
store and exporters can read events without importing the catalog.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from metis_core.field_defaults import empty_dict
from metis_core.ids import new_ulid

SYSTEM_SESSION_ID = "system"
"""Sentinel session id for events outside any session (CLI admin ops, trace.swept, bus lifecycle)."""


class Actor(StrEnum):
    USER = "user"
    AGENT = "agent"
    SYSTEM = "system"
    TOOL = "tool"
    WORKER = "worker"


class Sensitivity(StrEnum):
    """Most private first. A recording may move toward less private than its floor, never more."""

    PRIVATE = "private"
    USER_CONTROLLED = "user_controlled"
    PSEUDONYMOUS = "pseudonymous"
    AGGREGATABLE = "aggregatable"

    @property
    def rank(self) -> int:
        """0 = most private. Larger = less private."""
        return _SENSITIVITY_ORDER[self]


_SENSITIVITY_ORDER = {
    Sensitivity.PRIVATE: 0,
    Sensitivity.USER_CONTROLLED: 1,
    Sensitivity.PSEUDONYMOUS: 2,
    Sensitivity.AGGREGATABLE: 3,
}


def _now() -> datetime:
    return datetime.now(UTC)


class Event(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_ulid)
    timestamp: datetime = Field(default_factory=_now)
    session_id: str
    turn_id: str | None = None
    parent_event_id: str | None = None
    type: str
    actor: Actor
    payload: dict[str, Any] = Field(default_factory=empty_dict)
    sensitivity: Sensitivity = Sensitivity.PRIVATE

    @classmethod
    def built(
        cls, *, session_id: str, turn_id: str | None, parent_event_id: str | None, type: str, actor: Actor,
        payload: dict[str, Any], sensitivity: Sensitivity,
    ) -> Event:
        """A new event (fresh id and time) from values already of their fields' types, set as they are:
        the envelope of the trusted construction (events/trusted_event.py), which checked them. The
        same event as `Event(...)` with these arguments builds (tests/events/test_trusted_event.py), for
        ~1 µs instead of ~5: validating the envelope costs more than making its id."""
        from metis_core.events.trusted_event import built_event  # it imports this module

        return built_event(cls, session_id, turn_id, parent_event_id, type, actor, payload, sensitivity)

    @field_validator("timestamp")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("event timestamp must be timezone-aware (UTC)")
        return value.astimezone(UTC)

    @field_serializer("timestamp", when_used="json")
    def _ts(self, value: datetime) -> str:
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    @property
    def timestamp_us(self) -> int:
        """Unix microseconds, as stored in `events.timestamp_us`."""
        delta = self.timestamp - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds



def datetime_from_us(timestamp_us: int) -> datetime:
    seconds, micros = divmod(timestamp_us, 1_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros)
