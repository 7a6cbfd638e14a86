"""Payloads of the analytics domain: a person's data exported or forgotten (`metis users export`,
`metis users forget`; docs/users.md). Both audit-flagged, as spec §7.3 names them, so the fact that
a person left outlives every retention sweep; neither carries anything but the pseudonymous id and counts.
"""

from __future__ import annotations

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import NonNegativeInt, PayloadModel, UtcDatetime


class UserExportedPayload(PayloadModel):
    """Everything the record holds about one user was written out."""

    user_id: str
    sessions: NonNegativeInt
    messages: NonNegativeInt
    events: NonNegativeInt
    exported_at: UtcDatetime


class UserForgottenPayload(PayloadModel):
    """One user's content was erased: their sessions, messages and non-audit events deleted, their
    name and e-mail cleared, their keys revoked. Audit events stay, naming only the id."""

    user_id: str
    sessions_deleted: NonNegativeInt
    messages_deleted: NonNegativeInt
    events_deleted: NonNegativeInt
    audit_events_kept: NonNegativeInt
    keys_revoked: NonNegativeInt
    forgotten_at: UtcDatetime


_ACTORS = (Actor.USER,)

SPECS = (
    EventSpec("analytics.user_exported", UserExportedPayload, Sensitivity.PSEUDONYMOUS, _ACTORS, audit=True),
    EventSpec("analytics.user_forgotten", UserForgottenPayload, Sensitivity.PSEUDONYMOUS, _ACTORS, audit=True),
)
