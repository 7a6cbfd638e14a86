"""Payloads of the gateway domain (spec §6.13 and §7.3): key issue/revoke/rotate, failed
authentication, and a request refused because a key's spending cap was reached.

All are audit events. The plaintext token is never on the bus: keys are referenced by their
stable `gateway_key_id`, failed tokens by an 8-hex-char SHA-256 prefix.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import (
    DecimalString,
    InboundShape,
    NonNegativeInt,
    PayloadModel,
    QuotaLimitType,
    QuotaScope,
    UtcDatetime,
)


class GatewayKeyIssuedPayload(PayloadModel):
    """`metis gateway issue-key` wrote a new key to the keystore."""

    gateway_key_id: str
    name: str
    workspace_path: str
    issued_at: UtcDatetime
    user_id: str | None = None
    team_id: str | None = None
    allowed_models: list[str] | None = None
    daily_cap_usd: DecimalString | None = None
    monthly_cap_usd: DecimalString | None = None
    scope: Literal["model", "viewer", "admin"] | None = None
    """Added here (docs/event-bus.md): what the key may do; None on events from before scopes."""


class GatewayKeyRevokedPayload(PayloadModel):
    """A key was revoked by an admin or after its rotation grace period lapsed."""

    gateway_key_id: str
    revoked_at: UtcDatetime
    reason: Literal["admin_revoke", "grace_period_expired", "rotated"]


class GatewayKeyRotatedPayload(PayloadModel):
    """A key was replaced; the old one keeps working until `grace_period_until`."""

    old_gateway_key_id: str
    new_gateway_key_id: str
    grace_period_until: UtcDatetime
    workspace_path: str
    user_id: str | None = None
    team_id: str | None = None


class GatewayAuthFailedPayload(PayloadModel):
    """An inbound request was rejected at the auth gate, before routing.

    Extended here (docs/event-bus.md "Extended enums"): `inbound_shape` `serve` for a request to
    `metis serve`, and `reason` `insufficient_scope` for a valid key used beyond its scope.
    """

    reason: Literal["missing_token", "invalid_token", "key_revoked", "insufficient_scope"]
    inbound_shape: InboundShape | Literal["serve"]
    token_hash_prefix: str | None = Field(default=None, pattern=r"^[0-9a-f]{8}$")
    gateway_key_id: str | None = None


class GatewayQuotaExceededPayload(PayloadModel):
    """A request was refused because a budget (day, month or total) is spent or a rate limit is hit.

    Not given a payload by the spec (it is only named in the §7.3 audit set); designed here:
    which key, whose limit (`scope`: the key, its user or its team), which cap, the cap and the
    spend in the window as Decimal strings (budgets) or the per-minute limit and count (rpm, tpm),
    the window, and what was being asked for. See docs/event-bus.md.
    """

    gateway_key_id: str
    cap_type: QuotaLimitType
    cap_usd: DecimalString | None = None
    spent_usd: DecimalString | None = None
    limit_per_minute: NonNegativeInt | None = None
    used_per_minute: NonNegativeInt | None = None
    scope: QuotaScope = "gateway_key"
    window_start: UtcDatetime
    window_end: UtcDatetime
    inbound_shape: InboundShape | None = None
    requested_model: str | None = None
    user_id: str | None = None
    team_id: str | None = None


_PSEUDO = Sensitivity.PSEUDONYMOUS
_SYSTEM = (Actor.SYSTEM,)
SPECS = (
    EventSpec("gateway.key_issued", GatewayKeyIssuedPayload, _PSEUDO, _SYSTEM, phase="3", audit=True),
    EventSpec("gateway.key_revoked", GatewayKeyRevokedPayload, _PSEUDO, _SYSTEM, phase="3", audit=True),
    EventSpec("gateway.key_rotated", GatewayKeyRotatedPayload, _PSEUDO, _SYSTEM, phase="3", audit=True),
    EventSpec("gateway.auth_failed", GatewayAuthFailedPayload, _PSEUDO, _SYSTEM, phase="3", audit=True),
    EventSpec("gateway.quota_exceeded", GatewayQuotaExceededPayload, _PSEUDO, _SYSTEM, phase="3", audit=True),
)
