"""Numbered PostgreSQL migrations: `schema/NNNN_name.sql`, applied in order, each in its own transaction.

Every step runs under a transaction-scoped advisory lock and re-reads `schema_migrations` first,
so several processes opening one fresh database apply each step exactly once; a failing step
rolls back whole. Names and numbers match the SQLite steps, so SCHEMA_VERSION is one number.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from metis_core.errors import SchemaVersionError
from metis_core.store.sqlite.migrations import MIGRATIONS as SQLITE_MIGRATIONS
from metis_core.store.sqlite.migrations import SCHEMA_VERSION

MIGRATION_LOCK_KEY = 0x6D65746973  # "metis": the advisory lock every migrating process takes


def migration_files() -> list[tuple[int, str, str]]:
    """(number, name, sql) of every step, in order."""
    folder = resources.files("metis_core.store.postgres") / "schema"
    steps = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql"):
            number, _, rest = entry.name.partition("_")
            steps.append((int(number), rest.removesuffix(".sql"), entry.read_text(encoding="utf-8")))
    return steps


def _check_steps_match_sqlite(steps: list[tuple[int, str, str]]) -> None:
    names = [name for _, name, _ in steps]
    expected = [name for name, _ in SQLITE_MIGRATIONS]
    if names != expected:  # a packaging mistake, not a user error
        raise RuntimeError(f"PostgreSQL migrations {names} do not mirror the SQLite ones {expected}")


def applied_version(conn: Any) -> int:
    """The highest applied step (0 for an empty database)."""
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
    if not exists:
        return 0
    row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    return int(row[0])


def check_version(conn: Any, where: str) -> int:
    version = applied_version(conn)
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{where} has schema version {version}, newer than this metis supports "
            f"({SCHEMA_VERSION}); upgrade metis-core to use it"
        )
    return version


def migrate(conn: Any, where: str, *, up_to: int | None = None) -> list[int]:
    """Apply the missing steps on `conn` (a psycopg connection in autocommit mode); return those applied."""
    steps = migration_files()
    _check_steps_match_sqlite(steps)
    goal = SCHEMA_VERSION if up_to is None else up_to
    if check_version(conn, where) >= goal:
        return []
    applied = []
    for number, name, sql in steps:
        if number > goal:
            break
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, "
                "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            if applied_version(conn) >= number:
                continue
            conn.execute(sql)
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (number, name))
        applied.append(number)
    return applied


def migration_status(conn: Any) -> list[tuple[int, str, str | None]]:
    """(number, name, applied_at ISO or None) for every known step."""
    applied: dict[int, str] = {}
    if applied_version(conn):
        for version, stamp in conn.execute("SELECT version, applied_at FROM schema_migrations ORDER BY version"):
            applied[int(version)] = stamp.isoformat()
    return [(number, name, applied.get(number)) for number, name, _ in migration_files()]
