"""`metis db migrate` / `metis db status` underneath: which numbered steps a database has applied.

Works on either backend without going through a store: `database_status` reads the version and
the `schema_migrations` rows (and never migrates); `migrate_database` applies the missing steps
(each in its own transaction, idempotent) and reports what it did.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from metis_core.store.backend import Location, database_location, is_postgres_url, redact_url
from metis_core.store.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION


@dataclass(frozen=True)
class SchemaStatus:
    backend: str
    location: str
    """The file, or the URL without its password."""
    version: int
    code_version: int
    steps: tuple[tuple[int, str, str | None], ...]
    """(number, name, applied_at ISO text or None when pending)."""
    applied_now: tuple[int, ...] = ()

    @property
    def pending(self) -> tuple[int, ...]:
        return tuple(number for number, _, applied in self.steps if applied is None)

    def lines(self) -> list[str]:
        out = [
            f"backend: {self.backend}",
            f"database: {self.location}",
            f"schema_version: {self.version} (this metis: {self.code_version})",
        ]
        if self.applied_now:
            out.append(f"applied_now: {', '.join(str(n) for n in self.applied_now)}")
        for number, name, applied in self.steps:
            out.append(f"  {number:04d} {name}: {applied or 'pending'}")
        return out


def _sqlite_status(path: Path, applied_now: tuple[int, ...] = ()) -> SchemaStatus:
    from datetime import UTC, datetime

    from metis_core.store.sqlite.connection import connect, sqlite_errors
    from metis_core.store.sqlite.migrations import check_is_metis_database

    applied: dict[int, str] = {}
    version = 0
    if path.is_file():
        conn = connect(path, read_only=True)
        try:
            version = check_is_metis_database(conn, path)
            with sqlite_errors(path):
                if version:
                    for number, stamp in conn.execute("SELECT version, applied_at FROM schema_migrations"):
                        applied[int(number)] = datetime.fromtimestamp(stamp / 1e6, UTC).isoformat()
        finally:
            conn.close()
    steps = tuple((n, name, applied.get(n)) for n, (name, _) in enumerate(MIGRATIONS, start=1))
    return SchemaStatus("sqlite", str(path), version, SCHEMA_VERSION, steps, applied_now)


def _postgres_status(url: str, *, migrate: bool) -> SchemaStatus:
    from metis_core.store.postgres import migrations
    from metis_core.store.postgres.database import PostgresDatabase

    db = PostgresDatabase(url, migrate=False, max_size=1)
    try:
        with db.errors(), db.pool.connection() as conn:
            applied_now = tuple(migrations.migrate(conn, db.location)) if migrate else ()
            migrations.check_version(conn, db.location)
            version = migrations.applied_version(conn)
            steps = tuple(migrations.migration_status(conn))
    finally:
        db.close()
    return SchemaStatus("postgres", redact_url(url), version, SCHEMA_VERSION, steps, applied_now)


def database_status(location: Location | None = None) -> SchemaStatus:
    where = database_location(location)
    if is_postgres_url(where):
        return _postgres_status(str(where), migrate=False)
    return _sqlite_status(Path(where))


def migrate_database(location: Location | None = None) -> SchemaStatus:
    """Apply every missing step; returns the status afterwards, with the steps applied now."""
    where = database_location(location)
    if is_postgres_url(where):
        return _postgres_status(str(where), migrate=True)
    from metis_core.store.sqlite.connection import connect
    from metis_core.store.sqlite.migrations import migrate

    path = Path(where)
    before = _sqlite_status(path).version
    conn = connect(path)
    try:
        after = migrate(conn, path)
    finally:
        conn.close()
    return _sqlite_status(path, tuple(range(before + 1, after + 1)))
