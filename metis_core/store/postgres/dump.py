"""Backup and restore of a PostgreSQL store with the server's own tools: `pg_dump` and `pg_restore`.

`dump` exports a snapshot from a REPEATABLE READ transaction, reads the schema version and event
figures in it, and runs `pg_dump --format=custom --snapshot=...` on that same snapshot, so the
figures describe exactly what the file holds; the file is written beside the destination and
renamed into place. `restore` checks the file with `pg_restore --list` and its schema version,
then runs `pg_restore --clean --if-exists --single-transaction` (all of it or nothing).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from metis_core.errors import BackupError, SchemaVersionError
from metis_core.store.backend import redact_url
from metis_core.store.postgres.database import PostgresDatabase
from metis_core.store.sqlite.migrations import SCHEMA_VERSION

DUMP_TIMEOUT_SECONDS = 3600


@dataclass(frozen=True)
class DumpFigures:
    schema_version: int
    event_count: int
    oldest_event_us: int | None
    newest_event_us: int | None


def find_tool(name: str) -> str:
    """`pg_dump` / `pg_restore` on PATH, else the newest /usr/lib/postgresql/*/bin one."""
    found = shutil.which(name)
    if found:
        return found
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        candidate = Path(folder) / name
        if candidate.exists():
            return str(candidate)
    raise BackupError(
        f"{name} not found; install the PostgreSQL client tools (Debian: apt-get install postgresql-client)"
    )


def _run(args: list[str], what: str) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=DUMP_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BackupError(f"{what} could not run ({error})") from error
    if done.returncode != 0:
        raise BackupError(f"{what} failed: {done.stderr.strip()[:500]}")
    return done.stdout


def dump(url: str, dest: Path) -> DumpFigures:
    """Write a custom-format dump of the database at `url` to `dest` (atomically)."""
    temp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    db = PostgresDatabase(url, migrate=False, max_size=1)
    try:
        with db.errors(), db.pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            snapshot = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]  # type: ignore[index]
            version = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]  # type: ignore[index]
            count, oldest, newest = conn.execute(  # type: ignore[misc]
                "SELECT COUNT(*), MIN(timestamp_us), MAX(timestamp_us) FROM events"
            ).fetchone()
            _run([find_tool("pg_dump"), "--format=custom", f"--snapshot={snapshot}", f"--file={temp}",
                  f"--dbname={url}"], f"pg_dump of {redact_url(url)}")
        with open(temp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temp, dest)
    finally:
        temp.unlink(missing_ok=True)
        db.close()
    return DumpFigures(int(version), int(count), oldest, newest)


def dump_schema_version(backup: Path) -> int:
    """The highest schema_migrations row inside a dump file (0 if it has none)."""
    tool = find_tool("pg_restore")
    _run([tool, "--list", str(backup)], f"pg_restore --list {backup} (is it a `metis backup` file?)")
    text = _run([tool, "--data-only", "--table=schema_migrations", "--file=-", str(backup)], "reading the dump")
    versions = []
    in_copy = False
    for line in text.splitlines():
        if line.startswith("COPY ") and "schema_migrations" in line:
            in_copy = True
        elif in_copy and line == "\\.":
            in_copy = False
        elif in_copy and line:
            versions.append(int(line.split("\t", 1)[0]))
    return max(versions, default=0)


def restore_dump(backup: Path, url: str, *, allow_overwrite: bool) -> DumpFigures:
    """Replace the contents of the database at `url` with the dump, in one transaction."""
    if not backup.is_file():
        raise BackupError(f"backup {backup} does not exist")
    version = dump_schema_version(backup)
    if version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"backup {backup} has schema version {version} but this metis uses {SCHEMA_VERSION}; restore it "
            "with the metis version that made it, then run `metis db migrate`"
        )
    db = PostgresDatabase(url, migrate=False, max_size=1)
    try:
        with db.errors():
            has_tables = db.execute("SELECT to_regclass('events') IS NOT NULL").fetchone()[0]
            populated = has_tables and db.execute("SELECT EXISTS (SELECT 1 FROM sessions UNION ALL "
                                                  "SELECT 1 FROM events)").fetchone()[0]
        if populated and not allow_overwrite:
            raise BackupError(f"{redact_url(url)} holds data; restore with --force to replace it")
        _run([find_tool("pg_restore"), "--clean", "--if-exists", "--no-owner", "--single-transaction",
              "--exit-on-error", f"--dbname={url}", str(backup)], f"pg_restore into {redact_url(url)}")
        with db.errors():
            count, oldest, newest = db.execute(
                "SELECT COUNT(*), MIN(timestamp_us), MAX(timestamp_us) FROM events"
            ).fetchone()
            restored = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]
    finally:
        db.close()
    return DumpFigures(int(restored), int(count), oldest, newest)
