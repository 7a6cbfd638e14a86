"""`metis db copy`: move a whole store between backends (SQLite -> PostgreSQL, or back) without loss.

Both ends are opened (and migrated) as stores would be; the target must be empty. Every table is
copied in key order inside one target transaction, read back inside it and compared with the
source by row count and a SHA-256 over canonical rows (JSON with sorted keys, money as normalised
decimals, gateway money as picodollars), so a mismatch rolls everything back: nothing half-copied.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from metis_core.errors import StoreError
from metis_core.store.backend import Database, Location, open_backend
from metis_core.store.gateway_keys import from_pusd, to_pusd


@dataclass(frozen=True)
class TableSpec:
    name: str
    key: str
    columns: tuple[str, ...]
    json_columns: frozenset[str] = frozenset()
    money_columns: frozenset[str] = frozenset()
    picodollar_columns: frozenset[str] = frozenset()
    """Integer picodollars `x_pusd` on SQLite, numeric USD `x_usd` on PostgreSQL (the gateway's money)."""

    def names(self, db: Database) -> tuple[str, ...]:
        if db.backend != "postgres":
            return self.columns
        return tuple(c.removesuffix("_pusd") + "_usd" if c in self.picodollar_columns else c for c in self.columns)


TABLES: tuple[TableSpec, ...] = (
    TableSpec("sessions", "id", (
        "id", "workspace_path", "active_model", "routing_policy_json", "schema_version", "created_at", "updated_at",
        "tool_id_map_json", "title", "ended_at", "disposition", "total_cost_usd", "unpriced_message_count",
        "total_input_tokens", "total_output_tokens", "parent_session_id", "replay_of",
    ), frozenset({"routing_policy_json", "tool_id_map_json"}), frozenset({"total_cost_usd"})),
    TableSpec("messages", "id", (
        "id", "session_id", "role", "content_json", "metadata_json", "created_at", "schema_version",
    ), frozenset({"content_json", "metadata_json"})),
    TableSpec("tool_calls", "id", (
        "id", "session_id", "message_id", "result_message_id", "name", "status", "provider_id", "provider",
        "created_at", "completed_at",
    )),
    TableSpec("events", "id", (
        "id", "timestamp_us", "session_id", "turn_id", "parent_event_id", "type", "actor", "sensitivity",
        "payload_json",
    ), frozenset({"payload_json"})),
    TableSpec("trace_gaps", "session_id, gap_start_id, gap_end_id", (
        "session_id", "gap_start_id", "gap_end_id", "missing_ids_json", "detected_at",
    )),
    TableSpec("trace_state", "key", ("key", "value")),
    TableSpec("eval_verdicts", "eval_id", (
        "eval_id", "subject_kind", "subject_id", "session_id", "rubric_id", "rubric_version", "judge_kind",
        "judge_model", "score", "confidence", "judge_cost_usd", "signals_json", "trigger", "created_at",
    ), frozenset({"signals_json"}), frozenset({"judge_cost_usd"})),
    TableSpec("pattern_fingerprints", "id", (
        "id", "feature_key", "kind", "features_json", "embedding_json", "created_at", "last_seen_at",
    ), frozenset({"features_json", "embedding_json"})),
    TableSpec("pattern_outcomes", "id", (
        "id", "fingerprint_id", "session_id", "turn_id", "model", "score", "cost_usd", "latency_ms",
        "pricing_version", "recorded_at",
    ), money_columns=frozenset({"cost_usd"})),
    TableSpec("gateway_keys", "id", (
        "id", "name", "prefix", "secret_hash", "user_id", "team_id", "allowed_models_json", "budget_pusd",
        "budget_period", "rpm", "tpm", "created_at", "expires_at", "revoked_at", "revoke_reason", "replaced_by",
        "grace_until", "scope",
    ), frozenset({"allowed_models_json"}), picodollar_columns=frozenset({"budget_pusd"})),
    TableSpec("gateway_limits", "scope, subject_id", (
        "scope", "subject_id", "budget_pusd", "budget_period", "rpm", "tpm",
    ), picodollar_columns=frozenset({"budget_pusd"})),
    TableSpec("gateway_spend", "scope, subject_id, window_start", (
        "scope", "subject_id", "window_start", "spent_pusd", "alerted_percent",
    ), picodollar_columns=frozenset({"spent_pusd"})),
    TableSpec("gateway_minute", "scope, subject_id, minute", (
        "scope", "subject_id", "minute", "requests", "tokens",
    )),
)  # fmt: skip
"""Parents before children (foreign keys), generated columns left out."""

INSERT_BATCH_ROWS = 1_000


@dataclass(frozen=True)
class TableCopy:
    name: str
    rows: int
    sha256: str


@dataclass(frozen=True)
class CopyReport:
    source: str
    target: str
    tables: tuple[TableCopy, ...]

    def lines(self) -> list[str]:
        out = [f"source: {self.source}", f"target: {self.target}"]
        out += [f"{t.name}: {t.rows} rows, sha256 {t.sha256[:16]}… (identical)" for t in self.tables]
        return out


def _canonical(spec: TableSpec, row: Sequence[Any]) -> bytes:
    values: list[Any] = []
    for column, value in zip(spec.columns, row, strict=True):
        if value is None:
            values.append(None)
        elif column in spec.json_columns:
            values.append(orjson.loads(value))
        elif column in spec.money_columns:
            values.append(format(Decimal(str(value)).normalize(), "f"))
        else:
            values.append(value)
    return orjson.dumps(values, option=orjson.OPT_SORT_KEYS)


def _pusd_positions(spec: TableSpec) -> list[int]:
    return [i for i, c in enumerate(spec.columns) if c in spec.picodollar_columns]


def _read(db: Database, spec: TableSpec) -> list[Any]:
    """Rows in SQLite's form: gateway money as integer picodollars on either backend."""
    rows = db.execute(f"SELECT {', '.join(spec.names(db))} FROM {spec.name} ORDER BY {spec.key}").fetchall()
    positions = _pusd_positions(spec)
    if db.backend != "postgres" or not positions:
        return rows
    out = []
    for row in rows:
        values = list(row)
        for i in positions:
            values[i] = to_pusd(Decimal(values[i])) if values[i] is not None else None
        out.append(tuple(values))
    return out


def _for_target(db: Database, spec: TableSpec, rows: list[Any]) -> list[Any]:
    if db.backend == "sqlite":  # sqlite3 stores money as decimal text, not Decimal objects
        return [tuple(format(v, "f") if isinstance(v, Decimal) else v for v in row) for row in rows]
    positions = _pusd_positions(spec)
    if not positions:
        return rows
    out = []
    for row in rows:
        values = list(row)
        for i in positions:
            values[i] = from_pusd(values[i]) if values[i] is not None else None
        out.append(tuple(values))
    return out


def table_digest(spec: TableSpec, rows: Iterable[Sequence[Any]]) -> tuple[int, str]:
    digest, count = hashlib.sha256(), 0
    for row in rows:
        digest.update(_canonical(spec, row) + b"\n")
        count += 1
    return count, digest.hexdigest()


def copy_database(
    source: Location, target: Location, *, progress: Callable[[int, int], None] | None = None
) -> CopyReport:
    """Copy every table of `source` into the empty `target`; returns the verified counts and hashes."""
    if str(source) == str(target):
        raise StoreError("--from and --to name the same database; copy into a different, empty one")
    src = open_backend(source)
    try:
        dst = open_backend(target)
        try:
            return _copy(src, dst, progress)
        finally:
            dst.close()
    finally:
        src.close()


def _copy(src: Database, dst: Database, progress: Callable[[int, int], None] | None) -> CopyReport:
    with src.errors():
        data = {spec.name: _read(src, spec) for spec in TABLES}
    total = sum(len(rows) for rows in data.values())
    copied: list[TableCopy] = []
    done = 0
    with dst.transaction():
        for spec in TABLES:
            (existing,) = dst.execute(f"SELECT COUNT(*) FROM {spec.name}").fetchone()
            if existing:
                raise StoreError(
                    f"{dst.location} already holds {existing} rows in {spec.name}; copy into an empty database "
                    "(nothing was written)"
                )
        for spec in TABLES:
            rows = data[spec.name]
            writable = _for_target(dst, spec, rows)
            marks = ", ".join("?" for _ in spec.columns)
            insert = f"INSERT INTO {spec.name} ({', '.join(spec.names(dst))}) VALUES ({marks})"
            for start in range(0, len(writable), INSERT_BATCH_ROWS):
                dst.executemany(insert, writable[start:start + INSERT_BATCH_ROWS])
                done += len(writable[start:start + INSERT_BATCH_ROWS])
                if progress is not None:
                    progress(done, total)
            expected = table_digest(spec, rows)
            actual = table_digest(spec, _read(dst, spec))
            if actual != expected:
                raise StoreError(
                    f"copy check failed for {spec.name}: source {expected[0]} rows sha256 {expected[1][:16]}, "
                    f"target {actual[0]} rows sha256 {actual[1][:16]}; the copy was rolled back"
                )
            copied.append(TableCopy(spec.name, expected[0], expected[1]))
        if dst.backend == "postgres":  # identity columns continue after the copied ids
            dst.execute(
                "SELECT setval(pg_get_serial_sequence('pattern_outcomes', 'id'), "
                "COALESCE((SELECT MAX(id) FROM pattern_outcomes), 0) + 1, false)"
            )
    return CopyReport(str(src.location), str(dst.location), tuple(copied))
