"""Payloads of the bus domain (spec §6.10): subscriber lifecycle and trace gaps.

Bus health problems (overflow, handler errors) are structured log lines, never events: routing
them through the bus they describe would recurse.
"""

from __future__ import annotations

from typing import Any, Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import NonNegativeInt, PayloadModel, UtcDatetime


class BusSubscriberRegisteredPayload(PayloadModel):
    """A subscription was attached to the bus."""

    subscription_name: str
    filter: dict[str, Any]
    fast_path: bool


class BusSubscriberUnregisteredPayload(PayloadModel):
    """A subscription was removed from the bus."""

    subscription_name: str
    reason: Literal["explicit", "client_disconnect", "shutdown", "removed_after_errors"]


class BusGapDetectedPayload(PayloadModel):
    """The trace store found events that were emitted but never persisted."""

    session_id: str
    gap_start_id: str
    gap_end_id: str
    estimated_missing_count: NonNegativeInt
    detected_at: UtcDatetime


_PSEUDO = Sensitivity.PSEUDONYMOUS
_SYSTEM = (Actor.SYSTEM,)
SPECS = (
    EventSpec("bus.subscriber_registered", BusSubscriberRegisteredPayload, _PSEUDO, _SYSTEM),
    EventSpec("bus.subscriber_unregistered", BusSubscriberUnregisteredPayload, _PSEUDO, _SYSTEM),
    EventSpec("bus.gap_detected", BusGapDetectedPayload, _PSEUDO, _SYSTEM),
)
