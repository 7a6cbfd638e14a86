"""Opening the one metis SQLite database, and turning SQLite failures into named errors.

`open_database` gives a connection in WAL mode with synchronous=NORMAL, foreign keys on and a
busy timeout, with the schema brought up to date. `translate_sqlite_error` maps "locked",
"not a database", "disk full" and "read-only" to the StoreError classes, naming the file.
It holds no tables and no queries of its own: those live in the stores that use it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from metis_core.errors import (
    CorruptDatabaseError,
    DatabaseLockedError,
    StorageFullError,
    StoreError,
)

DB_FILENAME = "metis.db"
BUSY_TIMEOUT_SECONDS = 5.0


def metis_home() -> Path:
    """METIS_HOME, or ~/.metis when it is not set."""
    return Path(os.environ.get("METIS_HOME") or "~/.metis").expanduser()


def default_db_path() -> Path:
    return metis_home() / DB_FILENAME


def translate_sqlite_error(error: sqlite3.Error, path: Path | str) -> StoreError:
    """The StoreError that says what happened to `path` and what to do next."""
    text = str(error).lower()
    code = getattr(error, "sqlite_errorcode", None)
    if "locked" in text or "busy" in text or code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return DatabaseLockedError(
            f"another metis process holds {path} (waited {BUSY_TIMEOUT_SECONDS:g}s); "
            "let it finish or stop it, then try again"
        )
    if (
        "not a database" in text
        or "malformed" in text
        or code
        in (
            sqlite3.SQLITE_NOTADB,
            sqlite3.SQLITE_CORRUPT,
        )
    ):
        return CorruptDatabaseError(
            f"{path} is damaged or is not a SQLite database ({error}); restore it from a backup "
            "with `metis restore <backup> --force`, or move it aside to start afresh"
        )
    if "disk is full" in text or "database or disk is full" in text or code == sqlite3.SQLITE_FULL:
        return StorageFullError(
            f"no space left to write {path}; free some disk space and try again (nothing was written)"
        )
    if "readonly" in text or "read-only" in text or code == sqlite3.SQLITE_READONLY:
        return StorageFullError(
            f"{path} (or its directory) is read-only; make it writable or point METIS_HOME "
            "at a writable directory (nothing was written)"
        )
    if "unable to open" in text or code == sqlite3.SQLITE_CANTOPEN:
        parent = Path(path).parent
        if not os.access(parent, os.W_OK):
            return StorageFullError(
                f"cannot create {path}: {parent} is not writable; point METIS_HOME at a writable directory"
            )
        return StoreError(f"cannot open {path} ({error}); check the path and its permissions")
    return StoreError(f"database error on {path}: {error}")


@contextmanager
def sqlite_errors(path: Path | str) -> Iterator[None]:
    """Re-raise any sqlite3.Error inside the block as the matching StoreError."""
    try:
        yield
    except sqlite3.Error as error:
        raise translate_sqlite_error(error, path) from error


def connect(path: Path | str, *, read_only: bool = False) -> sqlite3.Connection:
    """A tuned connection to `path`, without touching the schema.

    Autocommit mode (`isolation_level=None`): callers open transactions explicitly with
    `write_transaction`, so nothing is ever left implicitly open. `read_only` opens the file
    with `mode=ro` and never creates it.
    """
    db_path = Path(path)
    if not read_only:
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StorageFullError(
                f"cannot create the directory for {db_path} ({error.strerror}); point METIS_HOME "
                "at a writable directory"
            ) from error
    elif not db_path.is_file():
        raise StoreError(f"{db_path} does not exist")
    with sqlite_errors(db_path):
        if read_only:
            conn = _connect_read_only(db_path)
        else:
            conn = sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
            if not read_only:
                _switch_to_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            conn.close()
            raise
    return conn


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """`PRAGMA journal_mode = WAL`, waiting out another process doing the same.

    Switching a new database's journal takes an exclusive lock, and SQLite answers "database is
    locked" at once, without its busy handler, while another connection holds it (two metis
    processes opening a fresh home together). Retried for up to the busy timeout, like any lock."""
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error).lower() or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def _connect_read_only(db_path: Path) -> sqlite3.Connection:
    """`mode=ro`; when SQLite cannot make the WAL index beside it (a read-only directory), `immutable=1`."""
    uri = db_path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None,
                           check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        conn.close()
        conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=BUSY_TIMEOUT_SECONDS,
                               isolation_level=None, check_same_thread=False)
    return conn


def is_read_only_home(db_path: Path) -> bool:
    """The database exists but its directory cannot be written: it can be read, not changed."""
    return db_path.is_file() and not os.access(db_path.parent, os.W_OK)


def open_database(path: Path | str | None = None) -> tuple[sqlite3.Connection, Path]:
    """Connect to `path` (default METIS_HOME/metis.db) and migrate it to the current schema.

    An existing database in a directory that cannot be written is opened read-only (reading
    works; a write raises the read-only StorageFullError). Raises CorruptDatabaseError for a
    foreign or damaged file, SchemaVersionError for a file written by a newer metis.
    """
    from metis_core.store.sqlite.migrations import SCHEMA_VERSION, check_is_metis_database, migrate

    db_path = Path(path) if path is not None else default_db_path()
    if is_read_only_home(db_path):
        conn = connect(db_path, read_only=True)
        try:
            version = check_is_metis_database(conn, db_path)
        except BaseException:
            conn.close()
            raise
        if version < SCHEMA_VERSION:
            conn.close()
            raise StorageFullError(
                f"{db_path} needs upgrading to schema {SCHEMA_VERSION} but {db_path.parent} is read-only; "
                "make it writable once so metis can upgrade it"
            )
        return conn, db_path
    conn = connect(db_path)
    try:
        migrate(conn, db_path)
    except BaseException:
        conn.close()
        raise
    return conn, db_path


@contextmanager
def write_transaction(conn: sqlite3.Connection, path: Path | str) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error; SQLite errors become StoreErrors.

    IMMEDIATE takes the write lock up front, so a second writer waits on the busy timeout
    instead of failing half-way through with SQLITE_BUSY on upgrade from a read lock.
    """
    with sqlite_errors(path):
        conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except sqlite3.Error as error:
        _rollback(conn)
        raise translate_sqlite_error(error, path) from error
    except BaseException:
        _rollback(conn)
        raise


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def integrity_check(conn: sqlite3.Connection) -> str:
    """'ok', or SQLite's first complaint."""
    row = conn.execute("PRAGMA integrity_check").fetchone()
    return str(row[0]) if row else "no answer"
