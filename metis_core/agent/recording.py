"""Emits a turn's events with the right session, turn and parent — the loop's view of the bus."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metis_core.events.bus import EventBus
from metis_core.events.envelope import Actor, Event, Sensitivity
from metis_core.events.trusted_event import make_trusted_event


class TurnRecorder:
    def __init__(self, bus: EventBus, session_id: str, turn_id: str | None = None) -> None:
        self.bus = bus
        self.session_id = session_id
        self.turn_id = turn_id

    def emit(
        self,
        event_type: str,
        payload: Mapping[str, Any],
        parent: Event | None = None,
        *,
        actor: Actor | None = None,
        sensitivity: Sensitivity | None = None,
    ) -> Event | None:
        return self.bus.emit_new(
            event_type, payload, session_id=self.session_id, turn_id=self.turn_id, parent=parent, actor=actor,
            sensitivity=sensitivity,
        )

    def emit_trusted(
        self, event_type: str, payload: Mapping[str, Any], parent: Event | None = None, *, actor: Actor | None = None
    ) -> Event:
        """`emit` for a payload built from the caller's own typed values (`EventBus.emit_trusted`): built
        here and handed to the bus's second half, as `emit_trusted` does."""
        event = make_trusted_event(event_type, payload, session_id=self.session_id, turn_id=self.turn_id,
                                   parent=parent, actor=actor)
        return self.bus.enqueue_trusted(event, payload)
