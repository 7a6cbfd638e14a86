"""Payload of provider.degraded (spec §6.11): a soft warning that a provider is failing often.

The hard state that makes routing reject a provider is routing.provider_unavailable.
"""

from __future__ import annotations

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import NonNegativeInt, PayloadModel


class ProviderDegradedPayload(PayloadModel):
    """Recent failures crossed the soft threshold for a provider."""

    provider: str
    recent_failure_count: NonNegativeInt
    window_seconds: NonNegativeInt


SPECS = (
    EventSpec(
        "provider.degraded",
        ProviderDegradedPayload,
        Sensitivity.PSEUDONYMOUS,
        (Actor.SYSTEM,),
        ("llm.call_failed",),
        phase="2",
    ),
)
