"""Payloads of the session domain (spec §6.1): created, resumed, ended — and deleted (audit).

Sessions carry workspace identity as a hash so analytics can join without the path; the path
itself appears only on session.created.
"""

from __future__ import annotations

from typing import Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import NonNegativeFloat, NonNegativeInt, PayloadModel


class SessionCreatedPayload(PayloadModel):
    """A new session was opened in a workspace."""

    workspace_path: str
    workspace_hash: str
    initial_active_model: str | None
    routing_policy_version: str


class SessionResumedPayload(PayloadModel):
    """An existing session was picked up again."""

    workspace_hash: str
    last_event_id_at_resume: str | None


class SessionEndedPayload(PayloadModel):
    """A session finished, was abandoned after inactivity, or failed."""

    disposition: Literal["completed", "abandoned", "error"]
    turn_count: NonNegativeInt
    total_cost_usd: NonNegativeFloat
    duration_seconds: NonNegativeFloat


class SessionDeletedPayload(PayloadModel):
    """A person deleted a stored session (`metis sessions delete`). Recorded in the `system`
    session, since the deleted one is gone; its audit events are kept, like every audit event."""

    deleted_session_id: str
    workspace_hash: str
    message_count: NonNegativeInt
    events_deleted: NonNegativeInt
    audit_events_kept: NonNegativeInt


_SYSTEM = (Actor.SYSTEM,)
SPECS = (
    EventSpec("session.created", SessionCreatedPayload, Sensitivity.PSEUDONYMOUS, _SYSTEM),
    EventSpec("session.resumed", SessionResumedPayload, Sensitivity.PSEUDONYMOUS, _SYSTEM),
    EventSpec("session.ended", SessionEndedPayload, Sensitivity.PSEUDONYMOUS, _SYSTEM),
    EventSpec("session.deleted", SessionDeletedPayload, Sensitivity.PSEUDONYMOUS, (Actor.USER,), audit=True),
)
