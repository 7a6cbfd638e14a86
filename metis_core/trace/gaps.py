"""Finding events that were emitted but never persisted: causal gaps in the trace.

ULIDs are not contiguous, so a lost id cannot be seen in the id sequence. A stored event whose
`parent_event_id` is not stored can: that parent was emitted but never written. Missing parents
are grouped by their stored neighbours into `Gap`s; parents older than the retention floor are
not gaps. Lost events nothing stored points at stay invisible (see docs/persistence.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import orjson

from metis_core.events.catalog import make_event
from metis_core.events.envelope import Actor, Event
from metis_core.ids import ulid_timestamp_ms, ulid_to_int
from metis_core.store.backend import Database
from metis_core.store.records import to_us

if TYPE_CHECKING:
    from collections.abc import Callable

    from metis_core.trace.store import TraceStore

PRUNED_BEFORE_KEY = "pruned_before_us"
SAME_MILLISECOND_BOUND = 10_000
"""Beyond this counter distance two same-millisecond ids come from different generators."""


@dataclass(frozen=True)
class Gap:
    session_id: str
    gap_start_id: str
    """Last stored event of the session before the gap (the first missing id if none is)."""
    gap_end_id: str
    """First stored event of the session after the gap."""
    missing_ids: tuple[str, ...]
    """Ids known to be missing: parents that stored events point at."""
    estimated_missing_count: int

    def payload(self, detected_at: datetime) -> dict[str, object]:
        return {
            "session_id": self.session_id,
            "gap_start_id": self.gap_start_id,
            "gap_end_id": self.gap_end_id,
            "estimated_missing_count": self.estimated_missing_count,
            "detected_at": detected_at,
        }


def pruned_before_us(conn: Database) -> int:
    row = conn.execute("SELECT value FROM trace_state WHERE key = ?", (PRUNED_BEFORE_KEY,)).fetchone()
    return int(row[0]) if row else 0


def _was_pruned(missing_id: str, floor_us: int) -> bool:
    try:
        return ulid_timestamp_ms(missing_id) * 1000 < floor_us
    except ValueError:  # not a ULID: cannot be dated, so it cannot be excused
        return False


def estimate_missing(start_id: str, end_id: str, known_missing: int) -> int:
    """ULID arithmetic: ids a monotonic generator issued between two neighbours in one millisecond
    are consecutive integers, so their distance bounds the loss; otherwise, the known count."""
    try:
        start, end = ulid_to_int(start_id), ulid_to_int(end_id)
    except ValueError:
        return known_missing
    same_ms = start >> 80 == end >> 80
    distance = end - start - 1
    if same_ms and 0 <= distance <= SAME_MILLISECOND_BOUND:
        return max(known_missing, distance)
    return known_missing


def detect_gaps(conn: Database) -> list[Gap]:
    """Every causal gap in the trace, oldest session first."""
    floor = pruned_before_us(conn)
    rows = conn.execute(
        "SELECT DISTINCT e.session_id, e.parent_event_id FROM events e "
        "WHERE e.parent_event_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM events p WHERE p.id = e.parent_event_id) "
        "ORDER BY e.session_id, e.parent_event_id"
    ).fetchall()
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for session_id, missing_id in rows:
        if _was_pruned(missing_id, floor):
            continue
        (before,) = conn.execute(
            "SELECT MAX(id) FROM events WHERE session_id = ? AND id < ?", (session_id, missing_id)
        ).fetchone()
        (after,) = conn.execute(
            "SELECT MIN(id) FROM events WHERE session_id = ? AND id > ?", (session_id, missing_id)
        ).fetchone()
        if after is None:  # the child lives in another session; place the gap at the parent
            after = missing_id
        key = (session_id, before or missing_id, after)
        grouped.setdefault(key, []).append(missing_id)
    return [
        Gap(
            session_id=session_id,
            gap_start_id=start,
            gap_end_id=end,
            missing_ids=tuple(missing),
            estimated_missing_count=estimate_missing(start, end, len(missing)),
        )
        for (session_id, start, end), missing in grouped.items()
    ]


@dataclass(frozen=True)
class ParentCheck:
    """`metis trace verify --store`: every stored event's `parent_event_id` looked up."""

    events: int
    """Events in the store."""
    with_parent: int
    """Of them, the ones that name a parent."""
    pruned_parents: int
    """Distinct parents absent because retention deleted them (older than its floor): not a fault."""
    gaps: list[Gap]
    """Parents absent for any other reason, grouped as `detect_gaps` groups them."""

    @property
    def missing_parents(self) -> int:
        return sum(len(g.missing_ids) for g in self.gaps)


def check_parents(conn: Database) -> ParentCheck:
    """Every `parent_event_id` in the store against the stored events (one pass, read-only)."""
    (events,) = conn.execute("SELECT COUNT(*) FROM events").fetchone()
    (with_parent,) = conn.execute("SELECT COUNT(*) FROM events WHERE parent_event_id IS NOT NULL").fetchone()
    floor = pruned_before_us(conn)
    absent = conn.execute(
        "SELECT DISTINCT e.parent_event_id FROM events e WHERE e.parent_event_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM events p WHERE p.id = e.parent_event_id)"
    ).fetchall()
    pruned = sum(1 for (missing_id,) in absent if _was_pruned(missing_id, floor))
    return ParentCheck(int(events), int(with_parent), pruned, detect_gaps(conn) if len(absent) > pruned else [])


def report_new_gaps(store: TraceStore, emit: Callable[[Event], object]) -> list[Gap]:
    """Emit bus.gap_detected for each gap not reported before, then remember it.

    Emitting comes first: if recording fails the gap is announced again next start, never lost.
    """
    detected_at = datetime.now(UTC)
    with store.connection() as conn, conn.errors():
        known = {
            (sid, start, end)
            for sid, start, end in conn.execute("SELECT session_id, gap_start_id, gap_end_id FROM trace_gaps")
        }
        fresh = [g for g in detect_gaps(conn) if (g.session_id, g.gap_start_id, g.gap_end_id) not in known]
    for gap in fresh:
        emit(make_event("bus.gap_detected", gap.payload(detected_at), session_id=gap.session_id, actor=Actor.SYSTEM))
    if fresh:
        with store.connection() as conn, conn.transaction():
            conn.executemany(
                "INSERT INTO trace_gaps (session_id, gap_start_id, gap_end_id, missing_ids_json, "
                "detected_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    (
                        g.session_id,
                        g.gap_start_id,
                        g.gap_end_id,
                        orjson.dumps(g.missing_ids).decode(),
                        to_us(detected_at),
                    )
                    for g in fresh
                ],
            )
    return fresh


def known_gaps(conn: Database, session_id: str | None = None) -> list[Gap]:
    """Gaps already reported, for replay and analytics to flag affected sessions."""
    query = "SELECT session_id, gap_start_id, gap_end_id, missing_ids_json FROM trace_gaps"
    params: tuple[str, ...] = ()
    if session_id is not None:
        query += " WHERE session_id = ?"
        params = (session_id,)
    gaps = []
    for sid, start, end, missing_json in conn.execute(query + " ORDER BY session_id, gap_start_id", params):
        missing = tuple(orjson.loads(missing_json))
        gaps.append(Gap(sid, start, end, missing, estimate_missing(start, end, len(missing))))
    return gaps


def record_prune_floor(conn: Database, cutoff_us: int) -> None:
    """Inside a held transaction: events older than `cutoff_us` may be missing on purpose."""
    floor = max(cutoff_us, pruned_before_us(conn))
    conn.execute(
        "INSERT INTO trace_state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (PRUNED_BEFORE_KEY, str(floor)),
    )
