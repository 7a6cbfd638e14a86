"""Payload of quota.alert (named in the spec's §7.3 audit set without a payload; designed here).

A spending alert: some scope (a gateway key, a user or a team) crossed a percentage of its
daily or monthly USD cap. Refusing a request at 100% is gateway.quota_exceeded, not this.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import DecimalString, PayloadModel, QuotaCapType, UtcDatetime


class QuotaAlertPayload(PayloadModel):
    """Spend in the current window crossed `threshold_percent` of the cap."""

    scope: Literal["gateway_key", "user", "team"]
    subject_id: str
    """gateway_key_id, usr_<ulid> or team_<ulid>, matching `scope`."""
    cap_type: QuotaCapType
    threshold_percent: int = Field(ge=1, le=100)
    cap_usd: DecimalString
    spent_usd: DecimalString
    window_start: UtcDatetime
    window_end: UtcDatetime


SPECS = (
    EventSpec(
        "quota.alert",
        QuotaAlertPayload,
        Sensitivity.PSEUDONYMOUS,
        (Actor.SYSTEM,),
        ("llm.call_completed",),
        phase="3",
        audit=True,
    ),
)
