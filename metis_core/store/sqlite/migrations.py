"""Numbered schema migrations of metis.db, applied in order and recorded in the database.

Step N brings the schema from version N-1 to N inside one transaction, then stamps
`PRAGMA user_version = N` and a `schema_migrations` row with the time it was applied. A file
from a newer metis is refused (SchemaVersionError); a SQLite file that is not ours is refused
(CorruptDatabaseError). Steps are never edited once released: a change is a new step.
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from pathlib import Path

import orjson

from metis_core.errors import CorruptDatabaseError, SchemaVersionError
from metis_core.store.sqlite.connection import sqlite_errors, write_transaction

Step = Callable[[sqlite3.Connection], None]

_V1_SCHEMA = (
    # canonical-message-format §9.1
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        workspace_path TEXT NOT NULL,
        active_model TEXT,
        routing_policy_json TEXT,
        schema_version INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    )""",
    """CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content_json TEXT NOT NULL,
        metadata_json TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        schema_version INTEGER NOT NULL,
        FOREIGN KEY (session_id) REFERENCES sessions(id)
    )""",
    "CREATE INDEX idx_messages_session_created ON messages(session_id, created_at)",
    """CREATE TABLE tool_calls (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        result_message_id TEXT,
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        provider_id TEXT,
        provider TEXT,
        created_at INTEGER NOT NULL,
        completed_at INTEGER,
        FOREIGN KEY (session_id) REFERENCES sessions(id),
        FOREIGN KEY (message_id) REFERENCES messages(id),
        FOREIGN KEY (result_message_id) REFERENCES messages(id)
    )""",
    "CREATE INDEX idx_tool_calls_session_status ON tool_calls(session_id, status)",
    # event-bus-and-trace-catalog §7.1, without the FOREIGN KEY on session_id: the trace must
    # never refuse an event because its session row does not exist (the "system" sentinel,
    # gateway traffic, or a session.created that reaches the trace before the session row).
    """CREATE TABLE events (
        id TEXT PRIMARY KEY,
        timestamp_us INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        turn_id TEXT,
        parent_event_id TEXT,
        type TEXT NOT NULL,
        actor TEXT NOT NULL,
        sensitivity TEXT NOT NULL,
        payload_json TEXT NOT NULL
    )""",
    "CREATE INDEX idx_events_session_id ON events(session_id, id)",
    "CREATE INDEX idx_events_type_timestamp ON events(type, timestamp_us)",
    "CREATE INDEX idx_events_turn ON events(turn_id)",
    "CREATE INDEX idx_events_parent ON events(parent_event_id)",
    "CREATE INDEX idx_events_timestamp_us ON events(timestamp_us)",
)


def _v1_initial_schema(conn: sqlite3.Connection) -> None:
    for statement in _V1_SCHEMA:
        conn.execute(statement)


def _v2_resumable_sessions(conn: sqlite3.Connection) -> None:
    """What a session needs to resume on another provider, plus title, ending and totals."""
    for column in (
        "tool_id_map_json TEXT NOT NULL DEFAULT '{}'",
        "title TEXT",
        "ended_at INTEGER",
        "disposition TEXT",
        "total_cost_usd TEXT NOT NULL DEFAULT '0'",
        "unpriced_message_count INTEGER NOT NULL DEFAULT 0",
        "total_input_tokens INTEGER NOT NULL DEFAULT 0",
        "total_output_tokens INTEGER NOT NULL DEFAULT 0",
    ):
        conn.execute(f"ALTER TABLE sessions ADD COLUMN {column}")
    conn.execute("CREATE INDEX idx_messages_session_id ON messages(session_id, id)")
    conn.execute("CREATE INDEX idx_sessions_updated ON sessions(updated_at)")
    _backfill_tool_id_maps(conn)
    _backfill_totals(conn)


def _backfill_tool_id_maps(conn: sqlite3.Connection) -> None:
    maps: dict[str, dict[str, dict[str, str]]] = {}
    rows = conn.execute(
        "SELECT session_id, id, provider, provider_id FROM tool_calls "
        "WHERE provider IS NOT NULL AND provider_id IS NOT NULL"
    )
    for session_id, canonical_id, provider, provider_id in rows:
        maps.setdefault(session_id, {}).setdefault(canonical_id, {})[provider] = provider_id
    for session_id, tool_map in maps.items():
        conn.execute(
            "UPDATE sessions SET tool_id_map_json = ? WHERE id = ?",
            (orjson.dumps(tool_map, option=orjson.OPT_SORT_KEYS).decode(), session_id),
        )


def _backfill_totals(conn: sqlite3.Connection) -> None:
    totals: dict[str, tuple[Decimal, int, int, int]] = {}
    rows = conn.execute(
        "SELECT session_id, json_extract(metadata_json, '$.usage') FROM messages "
        "WHERE role = 'assistant' ORDER BY session_id, id"
    )
    for session_id, usage_json in rows:
        cost, unpriced, tokens_in, tokens_out = totals.get(session_id, (Decimal(0), 0, 0, 0))
        usage = orjson.loads(usage_json) if usage_json else {}
        raw_cost = usage.get("cost_usd")
        try:
            cost += Decimal(raw_cost) if raw_cost is not None else 0
        except InvalidOperation:
            raw_cost = None
        totals[session_id] = (
            cost,
            unpriced + (1 if raw_cost is None else 0),
            tokens_in
            + sum(int(usage.get(k, 0)) for k in ("input_tokens", "cached_input_tokens", "cache_creation_input_tokens")),
            tokens_out + int(usage.get("output_tokens", 0)),
        )
    for session_id, (cost, unpriced, tokens_in, tokens_out) in totals.items():
        conn.execute(
            "UPDATE sessions SET total_cost_usd = ?, unpriced_message_count = ?, "
            "total_input_tokens = ?, total_output_tokens = ? WHERE id = ?",
            (format(cost, "f"), unpriced, tokens_in, tokens_out, session_id),
        )


def _v3_trace_bookkeeping(conn: sqlite3.Connection) -> None:
    """Gaps already reported (so startup does not re-announce them) and the retention floor."""
    conn.execute(
        """CREATE TABLE trace_gaps (
            session_id TEXT NOT NULL,
            gap_start_id TEXT NOT NULL,
            gap_end_id TEXT NOT NULL,
            missing_ids_json TEXT NOT NULL,
            detected_at INTEGER NOT NULL,
            PRIMARY KEY (session_id, gap_start_id, gap_end_id)
        )"""
    )
    conn.execute("CREATE TABLE trace_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def _v4_worker_sessions(conn: sqlite3.Connection) -> None:
    """A delegated worker session names the planner session that started it (docs/delegation.md)."""
    conn.execute("ALTER TABLE sessions ADD COLUMN parent_session_id TEXT")
    conn.execute("CREATE INDEX idx_sessions_parent ON sessions(parent_session_id)")


def _v5_learning_tables(conn: sqlite3.Connection) -> None:
    """The learning layer's tables (docs/learning.md): evaluator verdicts (append-only) and the
    pattern store's fingerprints and per-session outcomes."""
    conn.execute(
        """CREATE TABLE eval_verdicts (
            eval_id TEXT PRIMARY KEY,
            subject_kind TEXT NOT NULL,
            subject_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            rubric_id TEXT NOT NULL,
            rubric_version TEXT NOT NULL,
            judge_kind TEXT NOT NULL,
            judge_model TEXT,
            score REAL NOT NULL,
            confidence REAL NOT NULL,
            judge_cost_usd TEXT NOT NULL,
            signals_json TEXT NOT NULL,
            trigger TEXT NOT NULL,
            created_at INTEGER NOT NULL
        )"""
    )
    conn.execute("CREATE INDEX idx_eval_verdicts_subject ON eval_verdicts(subject_kind, subject_id, eval_id)")
    conn.execute("CREATE INDEX idx_eval_verdicts_created ON eval_verdicts(created_at)")
    conn.execute(
        """CREATE TABLE pattern_fingerprints (
            id TEXT PRIMARY KEY,
            feature_key TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            features_json TEXT NOT NULL,
            embedding_json TEXT,
            created_at INTEGER NOT NULL,
            last_seen_at INTEGER NOT NULL
        )"""
    )
    conn.execute(
        """CREATE TABLE pattern_outcomes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            fingerprint_id TEXT NOT NULL REFERENCES pattern_fingerprints(id) ON DELETE CASCADE,
            session_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            model TEXT NOT NULL,
            score REAL,
            cost_usd TEXT NOT NULL,
            latency_ms INTEGER NOT NULL,
            pricing_version TEXT NOT NULL,
            recorded_at INTEGER NOT NULL,
            UNIQUE (turn_id, fingerprint_id)
        )"""
    )
    conn.execute("CREATE INDEX idx_pattern_outcomes_fingerprint ON pattern_outcomes(fingerprint_id, model)")
    conn.execute("CREATE INDEX idx_pattern_outcomes_recorded ON pattern_outcomes(recorded_at)")


_V6_GATEWAY_SCHEMA = (
    """CREATE TABLE gateway_keys (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        prefix TEXT NOT NULL UNIQUE,
        secret_hash TEXT NOT NULL,
        user_id TEXT,
        team_id TEXT,
        allowed_models_json TEXT,
        budget_pusd INTEGER,
        budget_period TEXT,
        rpm INTEGER,
        tpm INTEGER,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        revoked_at INTEGER,
        revoke_reason TEXT,
        replaced_by TEXT,
        grace_until INTEGER
    )""",
    """CREATE TABLE gateway_limits (
        scope TEXT NOT NULL,
        subject_id TEXT NOT NULL,
        budget_pusd INTEGER,
        budget_period TEXT,
        rpm INTEGER,
        tpm INTEGER,
        PRIMARY KEY (scope, subject_id)
    )""",
    """CREATE TABLE gateway_spend (
        scope TEXT NOT NULL,
        subject_id TEXT NOT NULL,
        window_start INTEGER NOT NULL,
        spent_pusd INTEGER NOT NULL DEFAULT 0,
        alerted_percent INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (scope, subject_id, window_start)
    )""",
    """CREATE TABLE gateway_minute (
        scope TEXT NOT NULL,
        subject_id TEXT NOT NULL,
        minute INTEGER NOT NULL,
        requests INTEGER NOT NULL DEFAULT 0,
        tokens INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (scope, subject_id, minute)
    )""",
)


def _v6_gateway_keys(conn: sqlite3.Connection) -> None:
    """Gateway keys (hashes only), budgets, per-window spend and per-minute counters.

    The queries over these tables live in store/gateway_keys.py; money is integer picodollars so
    that a charge is one atomic `spent = spent + ?` (SQLite has no decimal type).
    """
    for statement in _V6_GATEWAY_SCHEMA:
        conn.execute(statement)


_REPLAY_TITLE = re.compile(r"replay of (sess_[0-9A-HJKMNP-TV-Z]{26}) on \S")
"""The title `metis replay` gave its sessions before step 7 (metis_core/replay/session_replay.py)."""


def _v7_replay_sessions(conn: sqlite3.Connection) -> None:
    """A session made by `metis replay` names the session it replays (docs/record-replay.md).

    Replay sessions written before this step carried the link only in their title
    (`replay of <source id> on <model>`); the backfill reads it from there.
    """
    conn.execute("ALTER TABLE sessions ADD COLUMN replay_of TEXT")
    conn.execute("CREATE INDEX idx_sessions_replay_of ON sessions(replay_of)")
    rows = conn.execute("SELECT id, title FROM sessions WHERE title LIKE 'replay of % on %'").fetchall()
    for session_id, title in rows:
        found = _REPLAY_TITLE.match(title)
        if found is not None and found.group(1) != session_id:
            conn.execute("UPDATE sessions SET replay_of = ? WHERE id = ?", (found.group(1), session_id))


def _v8_gateway_key_scope(conn: sqlite3.Connection) -> None:
    """What a gateway key may do: `model` (call models, every key issued before this step),
    `viewer` or `admin` (read, or also chat on, `metis serve`; docs/gateway.md "Scopes")."""
    conn.execute(
        "ALTER TABLE gateway_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'model' "
        "CHECK (scope IN ('model', 'viewer', 'admin'))"
    )


def _v9_gateway_reservations(conn: sqlite3.Connection) -> None:
    """Budget reservations: a call's worst-case cost held against each budget window before it goes
    upstream, until it is settled, released or its lease expires (docs/gateway.md "Budgets and
    reservations"). A row per reservation and subject; money in picodollars like gateway_spend."""
    conn.execute(
        """CREATE TABLE gateway_reservations (
            id TEXT NOT NULL,
            scope TEXT NOT NULL,
            subject_id TEXT NOT NULL,
            window_start INTEGER NOT NULL,
            amount_pusd INTEGER NOT NULL CHECK (amount_pusd >= 0),
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            PRIMARY KEY (id, scope, subject_id)
        )"""
    )
    conn.execute("CREATE INDEX idx_gateway_reservations_window ON gateway_reservations(scope, subject_id, "
                 "window_start)")
    conn.execute("CREATE INDEX idx_gateway_reservations_expiry ON gateway_reservations(expires_at)")


def _v10_users(conn: sqlite3.Connection) -> None:
    """The user registry behind the gateway's pseudonymous ids (docs/users.md): the only place a
    name or e-mail is kept; `metis users forget` clears them and stamps forgotten_at."""
    conn.execute(
        """CREATE TABLE users (
            id TEXT PRIMARY KEY,
            name TEXT,
            email TEXT,
            team_id TEXT,
            created_at INTEGER NOT NULL,
            disabled_at INTEGER,
            forgotten_at INTEGER
        )"""
    )


def _v11_events_live_position(conn: sqlite3.Connection) -> None:
    """Nothing on SQLite: the PostgreSQL step gives events a commit-ordered position and a NOTIFY
    trigger for `metis serve`'s live feed across processes; SQLite keeps the in-process bus path
    (docs/serve.md "Live across instances"). The step exists so both backends count alike."""
    del conn


def _v12_console_indexes(conn: sqlite3.Connection) -> None:
    """The console's sessions table sorted by start time, and its keyset pages, walk an index
    (store/session_page.py) instead of sorting every session."""
    conn.execute("CREATE INDEX idx_sessions_created ON sessions(created_at, id)")


MIGRATIONS: tuple[tuple[str, Step], ...] = (
    ("initial_schema", _v1_initial_schema),
    ("resumable_sessions", _v2_resumable_sessions),
    ("trace_bookkeeping", _v3_trace_bookkeeping),
    ("worker_sessions", _v4_worker_sessions),
    ("learning_tables", _v5_learning_tables),
    ("gateway_keys", _v6_gateway_keys),
    ("replay_sessions", _v7_replay_sessions),
    ("gateway_key_scope", _v8_gateway_key_scope),
    ("gateway_reservations", _v9_gateway_reservations),
    ("users", _v10_users),
    ("events_live_position", _v11_events_live_position),
    ("console_indexes", _v12_console_indexes),
)
"""Step N (1-based) is MIGRATIONS[N-1]."""

SCHEMA_VERSION = len(MIGRATIONS)


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _our_tables_missing(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").fetchone()
    return row is None


def _foreign_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
    return [str(name) for (name,) in rows]


@contextmanager
def _one_snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """A read transaction around the block (none when the caller already has one open)."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def check_is_metis_database(conn: sqlite3.Connection, path: Path | str) -> int:
    """The file's schema version; raises if the file is not ours or is newer than this code.

    Its reads share one snapshot: read one by one, another process's first creation could commit
    between them, and a version of 0 beside that process's new tables would look like a foreign file."""
    with sqlite_errors(path), _one_snapshot(conn):
        version = user_version(conn)
        if version == 0:
            tables = _foreign_tables(conn)
            if tables:
                raise CorruptDatabaseError(
                    f"{path} is not a metis database (it holds tables {', '.join(tables[:5])}); "
                    "point METIS_HOME elsewhere or move the file aside"
                )
            return 0
        if _our_tables_missing(conn):
            raise CorruptDatabaseError(
                f"{path} is not a metis database (user_version {version} but no schema_migrations "
                "table); point METIS_HOME elsewhere or move the file aside"
            )
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path} has schema version {version}, newer than this metis supports "
            f"({SCHEMA_VERSION}); upgrade metis-core to open it"
        )
    return version


def migrate(conn: sqlite3.Connection, path: Path | str, *, up_to: int | None = None) -> int:
    """Apply every step above the file's version (up to `up_to`, default all); return the version.

    Each step re-reads user_version under the write lock, so two processes opening an old
    file at once apply each step exactly once.
    """
    goal = SCHEMA_VERSION if up_to is None else up_to
    version = check_is_metis_database(conn, path)
    if version >= goal:
        return version
    for number, (name, step) in enumerate(MIGRATIONS, start=1):
        if number > goal:
            break
        with write_transaction(conn, path):
            if user_version(conn) >= number:
                continue
            if number == 1:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                    "name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
                )
            step(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (number, name, time.time_ns() // 1000),
            )
            conn.execute(f"PRAGMA user_version = {number}")
    return user_version(conn)
