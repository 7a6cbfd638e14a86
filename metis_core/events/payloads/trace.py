"""Payload of trace.swept (spec §6.14): one retention sweep of the trace store finished.

It is audit-flagged so the sweep history survives later sweeps; dry runs emit nothing.
"""

from __future__ import annotations

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import NonNegativeInt, PayloadModel, UtcDatetime


class TraceSweptPayload(PayloadModel):
    """Rows deleted, audit rows kept, the cutoff used and the oldest timestamp left."""

    rows_deleted: NonNegativeInt
    rows_audit_exempt: NonNegativeInt
    cutoff_timestamp: UtcDatetime
    oldest_kept_timestamp: UtcDatetime | None = None
    dry_run: bool
    swept_at: UtcDatetime


SPECS = (EventSpec("trace.swept", TraceSweptPayload, Sensitivity.PSEUDONYMOUS, (Actor.SYSTEM,), phase="3", audit=True),)
