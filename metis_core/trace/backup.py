"""Hot backup and guarded restore of metis.db (event-bus-and-trace-catalog §7.4).

`backup` snapshots the live database with `VACUUM INTO` (consistent while other connections
write) into a temporary file beside the destination, checks it and renames it into place.
`restore` refuses anything that is not a clean, intact metis backup of the running schema
version, and replaces the database atomically. Neither runs migrations on the files it copies.
On PostgreSQL both use pg_dump / pg_restore (store/postgres/dump.py).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from metis_core.errors import BackupError, CorruptDatabaseError, SchemaVersionError
from metis_core.events.envelope import datetime_from_us
from metis_core.store.backend import database_location, is_postgres_url, redact_url
from metis_core.store.db import connect, integrity_check, sqlite_errors
from metis_core.store.migrations import SCHEMA_VERSION, check_is_metis_database

if TYPE_CHECKING:
    from metis_core.store.postgres.dump import DumpFigures


@dataclass(frozen=True)
class BackupResult:
    """What a backup file holds. Derived from the file alone, so it is deterministic."""

    source: Path | str
    dest: Path | str
    """Files, or a PostgreSQL URL without its password."""
    bytes: int
    schema_version: int
    event_count: int
    oldest_event: datetime | None
    newest_event: datetime | None
    replaced_copy: Path | None = None
    """On restore over an existing database: where the replaced database was kept."""

    def lines(self) -> list[str]:
        """Stable `key: value` lines for the CLI (and a checksum-able paper trail)."""
        return [
            f"source: {self.source}",
            f"dest: {self.dest}",
            f"bytes: {self.bytes}",
            f"schema_version: {self.schema_version}",
            f"event_count: {self.event_count}",
            f"oldest_event: {self.oldest_event.isoformat() if self.oldest_event else '-'}",
            f"newest_event: {self.newest_event.isoformat() if self.newest_event else '-'}",
            *([f"replaced_database_kept_as: {self.replaced_copy}"] if self.replaced_copy else []),
        ]


def _open_snapshot(path: Path) -> sqlite3.Connection:
    """A read-only connection that never creates -wal/-shm files beside `path`."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)


def _inspect(file: Path, *, source: Path, dest: Path, what: str) -> BackupResult:
    """Check `file` is an intact metis database and describe it."""
    with sqlite_errors(file):
        conn = _open_snapshot(file)
        try:
            verdict = integrity_check(conn)
            if verdict != "ok":
                raise CorruptDatabaseError(f"{what} {file} fails integrity_check ({verdict}); it cannot be used")
            version = check_is_metis_database(conn, file)
            if version == 0:
                raise CorruptDatabaseError(f"{what} {file} is empty, not a metis database")
            count, oldest, newest = conn.execute(
                "SELECT COUNT(*), MIN(timestamp_us), MAX(timestamp_us) FROM events"
            ).fetchone()
        finally:
            conn.close()
    return BackupResult(
        source=source,
        dest=dest,
        bytes=file.stat().st_size,
        schema_version=version,
        event_count=int(count),
        oldest_event=datetime_from_us(oldest) if oldest is not None else None,
        newest_event=datetime_from_us(newest) if newest is not None else None,
    )


def _temp_beside(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}")


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _postgres_result(source: str, dest: Path | str, file: Path, figures: DumpFigures) -> BackupResult:
    return BackupResult(
        source=source,
        dest=dest,
        bytes=file.stat().st_size,
        schema_version=figures.schema_version,
        event_count=figures.event_count,
        oldest_event=datetime_from_us(figures.oldest_event_us) if figures.oldest_event_us is not None else None,
        newest_event=datetime_from_us(figures.newest_event_us) if figures.newest_event_us is not None else None,
    )


def backup(db_path: Path | str | None, dest: Path | str, *, overwrite: bool = False) -> BackupResult:
    """Snapshot `db_path` (default METIS_HOME/metis.db) into the single file `dest`."""
    where = database_location(db_path)
    target = Path(dest)
    if is_postgres_url(where):
        from metis_core.store.postgres.dump import dump

        if target.exists() and not overwrite:
            raise BackupError(f"{target} already exists; choose another file or pass --force to overwrite it")
        target.parent.mkdir(parents=True, exist_ok=True)
        return _postgres_result(redact_url(str(where)), target, target, dump(str(where), target))
    source = Path(where)
    if not source.is_file():
        raise BackupError(f"nothing to back up: {source} does not exist")
    if target.exists() and not overwrite:
        raise BackupError(f"{target} already exists; choose another file or pass --force to overwrite it")
    if target.resolve() == source.resolve():
        raise BackupError(f"backup destination {target} is the database itself; choose another file")
    temp = _temp_beside(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temp.unlink(missing_ok=True)
    except OSError as error:
        raise BackupError(f"cannot write the backup at {target} ({error.strerror}); name a writable place: "
                          "metis backup DEST") from None
    conn = connect(source, read_only=True)
    try:
        with sqlite_errors(source):
            if check_is_metis_database(conn, source) == 0:
                raise CorruptDatabaseError(f"{source} is empty, not a metis database; nothing to back up")
        with sqlite_errors(temp):
            conn.execute("VACUUM INTO ?", (str(temp),))
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    finally:
        conn.close()
    try:
        _fsync(temp)
        _inspect(temp, source=source, dest=target, what="fresh backup")
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return _inspect(target, source=source, dest=target, what="backup")


def restore(
    backup_path: Path | str, db_path: Path | str | None = None, *, allow_overwrite: bool = False
) -> BackupResult:
    """Replace `db_path` (default METIS_HOME/metis.db) with the backup, atomically.

    Refused: a missing backup, `-wal`/`-shm` files beside it (not a clean `metis backup`), a
    corrupt or foreign file, a schema version other than this code's, and an existing database
    unless `allow_overwrite`. Stop other metis processes first.
    """
    source = Path(backup_path)
    where = database_location(db_path)
    if is_postgres_url(where):
        from metis_core.store.postgres.dump import restore_dump

        figures = restore_dump(source, str(where), allow_overwrite=allow_overwrite)
        return _postgres_result(str(source), redact_url(str(where)), source, figures)
    target = Path(where)
    if not source.is_file():
        raise BackupError(f"backup {source} does not exist")
    for suffix in ("-wal", "-shm"):
        companion = source.with_name(source.name + suffix)
        if companion.exists():
            raise BackupError(
                f"{companion} sits beside the backup, so {source} is not a clean `metis backup` file "
                "(it may be a live database with unflushed writes); make a backup with `metis backup`"
            )
    described = _inspect(source, source=source, dest=target, what="backup")
    if described.schema_version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"backup {source} has schema version {described.schema_version} but this metis uses "
            f"{SCHEMA_VERSION}; restore it with the metis version that made it, then open it with "
            "this one to migrate"
        )
    if target.exists() and not allow_overwrite:
        raise BackupError(f"{target} exists; restore with --force to replace it (a copy of it is kept)")
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = _temp_beside(target)
    kept: Path | None = None
    try:
        shutil.copyfile(source, temp)
        _fsync(temp)
        _inspect(temp, source=source, dest=target, what="copied backup")
        if target.exists():
            _retire_live_database(target)
            kept = _keep_replaced(target)
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    restored = _inspect(target, source=source, dest=target, what="restored database")
    return replace(restored, replaced_copy=kept)


def _keep_replaced(target: Path) -> Path:
    """Copy the database about to be replaced into backups/ (checkpointed, so one file is whole)."""
    kept = target.parent / "backups" / f"replaced-{datetime.now(UTC):%Y%m%d-%H%M%S-%f}.db"
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(target, kept)
    _fsync(kept)
    return kept


def _retire_live_database(target: Path) -> None:
    """Checkpoint the database being replaced and drop its -wal/-shm, so none of its pending
    frames are replayed onto the restored file. Refuses while another process has it open."""
    busy = 0
    conn = sqlite3.connect(target, timeout=1.0)
    try:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    except sqlite3.Error:
        busy = 0  # a corrupt file (the "replace a damaged database" case) has no WAL worth keeping
    finally:
        conn.close()
    if busy:
        raise BackupError(f"{target} is in use by another metis process; stop it, then restore again")
    for suffix in ("-wal", "-shm"):
        target.with_name(target.name + suffix).unlink(missing_ok=True)
