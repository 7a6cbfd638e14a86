"""`metis audit export`: the audit-flagged events of the trace as JSONL or CSV (spec §7.5).

An audit event is a trace event whose type is in AUDIT_EVENT_TYPES; this module selects them by
time range and type, in id order, and writes one record per event with stable fields. It reads
the database only (a read-only SQLite connection, or PostgreSQL without migrating) and never changes it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Literal

import orjson

from metis_core.errors import StoreError
from metis_core.events.catalog import AUDIT_EVENT_TYPES
from metis_core.store.backend import Location, database_location, is_postgres_url
from metis_core.store.db import connect, sqlite_errors
from metis_core.store.migrations import check_is_metis_database
from metis_core.trace.event_rows import EVENT_COLUMNS, event_fields
from metis_core.trace.store import event_filters

AuditFormat = Literal["jsonl", "csv"]
CSV_COLUMNS = (
    "id", "timestamp", "timestamp_us", "session_id", "turn_id", "parent_event_id", "type", "actor",
    "sensitivity", "payload",
)  # fmt: skip
"""Fixed column order; `payload` is the payload as a JSON string with sorted keys."""


def _record(row: tuple[Any, ...]) -> dict[str, Any]:
    """The event's fields, its timestamp as UTC text with the stored microseconds beside it."""
    record = event_fields(row)
    record["timestamp"] = record["timestamp"].strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    record["timestamp_us"] = row[1]
    return record


def audit_records(
    db_path: Location | None = None,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    types: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """Audit events in [since, until) of the given audit types (all when None), in id order."""
    wanted = AUDIT_EVENT_TYPES if types is None else frozenset(types)
    not_audit = sorted(wanted - AUDIT_EVENT_TYPES)
    if not_audit:
        raise StoreError(
            f"not audit event types: {', '.join(not_audit)}; choose from {', '.join(sorted(AUDIT_EVENT_TYPES))}"
        )
    where = database_location(db_path)
    clauses, params = event_filters(types=wanted, since=since, until=until)
    query = f"SELECT {EVENT_COLUMNS} FROM events WHERE {' AND '.join(clauses)} ORDER BY id"
    if is_postgres_url(where):
        return [_record(row) for row in _postgres_rows(str(where), query, params)]
    path = Path(where)
    conn = connect(path, read_only=True)
    try:
        with sqlite_errors(path):
            check_is_metis_database(conn, path)
            rows = conn.execute(query, params).fetchall()
    finally:
        conn.close()
    return [_record(row) for row in rows]


def _postgres_rows(url: str, query: str, params: list[Any]) -> list[Any]:
    from metis_core.store.postgres.database import PostgresDatabase
    from metis_core.store.postgres.migrations import check_version

    db = PostgresDatabase(url, migrate=False, max_size=1)
    try:
        with db.errors(), db.pool.connection() as conn:
            check_version(conn, db.location)
        with db.errors():
            return db.execute(query, params).fetchall()
    finally:
        db.close()


def export_audit(
    db_path: Location | None,
    out: Path | str | IO[str],
    format: AuditFormat = "jsonl",
    since: datetime | None = None,
    until: datetime | None = None,
    types: Iterable[str] | None = None,
) -> int:
    """Write the audit events to `out` (a path or a text stream); returns how many were written."""
    if format not in ("jsonl", "csv"):
        raise StoreError(f"audit export format {format!r} is not supported; use 'jsonl' or 'csv'")
    records = audit_records(db_path, since=since, until=until, types=types)
    buffer = io.StringIO(newline="")
    if format == "jsonl":
        for record in records:
            buffer.write(orjson.dumps(record, option=orjson.OPT_SORT_KEYS).decode() + "\n")
    else:
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for record in records:
            record["payload"] = orjson.dumps(record["payload"], option=orjson.OPT_SORT_KEYS).decode()
            writer.writerow(["" if record[c] is None else record[c] for c in CSV_COLUMNS])
    if isinstance(out, (str, Path)):
        Path(out).write_text(buffer.getvalue(), encoding="utf-8", newline="")
    else:
        out.write(buffer.getvalue())
    return len(records)
