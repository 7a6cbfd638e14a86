"""Time-based retention of the trace (spec §7.3): delete old events, never audit events.

One sweep deletes events older than `now - retention_days` whose type is not in
AUDIT_EVENT_TYPES, in short batches so the live writer is never blocked for long, then records
the retention floor (so gap detection does not mistake pruned parents for lost events) and
emits trace.swept. A dry run only counts. Session messages are not touched: they are not trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from metis_core.events.catalog import AUDIT_EVENT_TYPES, make_event
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor, Event, datetime_from_us
from metis_core.store.records import to_us
from metis_core.trace.gaps import record_prune_floor

if TYPE_CHECKING:
    from metis_core.trace.store import TraceStore

ProgressCallback = Callable[[int, int], None]
"""Called as (rows deleted so far, rows to delete in total) after each batch."""

DELETE_BATCH_ROWS = 5_000
DEFAULT_RETENTION_DAYS = 90


@dataclass(frozen=True)
class PurgeResult:
    rows_deleted: int
    """Rows deleted, or for a dry run the rows that would be."""
    rows_audit_exempt: int
    """Audit rows older than the cutoff, kept."""
    cutoff_timestamp: datetime
    oldest_kept_timestamp: datetime | None
    dry_run: bool
    swept_at: datetime

    def payload(self) -> dict[str, object]:
        """The trace.swept payload (spec §6.14)."""
        return {
            "rows_deleted": self.rows_deleted,
            "rows_audit_exempt": self.rows_audit_exempt,
            "cutoff_timestamp": self.cutoff_timestamp,
            "oldest_kept_timestamp": self.oldest_kept_timestamp,
            "dry_run": self.dry_run,
            "swept_at": self.swept_at,
        }


def _audit_clause() -> tuple[str, list[str]]:
    audit = sorted(AUDIT_EVENT_TYPES)
    return f"type IN ({', '.join('?' * len(audit))})", audit


def prune_trace(
    store: TraceStore,
    retention_days: float = DEFAULT_RETENTION_DAYS,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    emit: Callable[[Event], object] | None = None,
    progress: ProgressCallback | None = None,
) -> PurgeResult:
    """Sweep `store`. A real run emits trace.swept through `emit`, or, without one, appends it
    to the store directly so the sweep is always on the record. A dry run writes and emits nothing."""
    if retention_days < 0:
        raise ValueError("retention_days must not be negative")
    swept_at = (now or datetime.now(UTC)).astimezone(UTC)
    cutoff = swept_at - timedelta(days=retention_days)
    cutoff_us = to_us(cutoff)
    is_audit, audit_types = _audit_clause()
    expired = f"timestamp_us < ? AND NOT {is_audit}"
    with store.connection() as conn, conn.errors():
        (to_delete,) = conn.execute(
            f"SELECT COUNT(*) FROM events WHERE {expired}", [cutoff_us, *audit_types]
        ).fetchone()
        (exempt,) = conn.execute(
            f"SELECT COUNT(*) FROM events WHERE timestamp_us < ? AND {is_audit}", [cutoff_us, *audit_types]
        ).fetchone()
        if dry_run:
            (oldest,) = conn.execute(
                f"SELECT MIN(timestamp_us) FROM events WHERE NOT ({expired})", [cutoff_us, *audit_types]
            ).fetchone()
    deleted = 0
    if not dry_run:
        while True:
            with store.connection() as conn, conn.transaction():
                cursor = conn.execute(
                    conn.statements.delete_expired_events.format(expired=expired),
                    [cutoff_us, *audit_types, DELETE_BATCH_ROWS],
                )
                deleted += cursor.rowcount
                if cursor.rowcount < DELETE_BATCH_ROWS:
                    record_prune_floor(conn, cutoff_us)
            if progress is not None:
                progress(deleted, max(to_delete, deleted))
            if cursor.rowcount < DELETE_BATCH_ROWS:
                break
        with store.connection() as conn, conn.errors():
            (oldest,) = conn.execute("SELECT MIN(timestamp_us) FROM events").fetchone()
    elif progress is not None:
        progress(0, to_delete)
    result = PurgeResult(
        rows_deleted=deleted if not dry_run else int(to_delete),
        rows_audit_exempt=int(exempt),
        cutoff_timestamp=cutoff,
        oldest_kept_timestamp=datetime_from_us(oldest) if oldest is not None else None,
        dry_run=dry_run,
        swept_at=swept_at,
    )
    if not dry_run:
        event = make_event("trace.swept", result.payload(), session_id=SYSTEM_SESSION_ID, actor=Actor.SYSTEM)
        if emit is not None:
            emit(event)
        else:
            store.append(event)
    return result
