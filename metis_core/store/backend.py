"""The seam between the stores and their databases: one protocol, two backends.

`SessionStore` and `TraceStore` talk to a `Database` (sqlite3-like `execute`, explicit
`transaction()`, driver errors turned into StoreErrors) and take backend-specific SQL from its
`statements`. Portable SQL uses `?` placeholders. `open_backend` picks the backend from the
location: a `postgresql://` URL or a file path (METIS_DATABASE_URL / `database_url:` decide the default).
`SharedDatabase` is one location for all the stores of one process: one connection pool on PostgreSQL.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit, urlunsplit

from metis_core.errors import ConfigError

DATABASE_URL_ENV = "METIS_DATABASE_URL"
POOL_SIZE_ENV = "METIS_DATABASE_POOL_SIZE"
Location = Path | str
"""A SQLite file path, `sqlite:///path`, or a `postgresql://` URL."""


class Rows(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


@dataclass(frozen=True)
class Statements:
    """The SQL that differs between backends; each backend's `sql.py` fills every field."""

    insert_event: str
    """Nine event columns; a stored id is ignored."""
    insert_events_prefix: str
    """`INSERT INTO events (...) VALUES` for multi-row batches (rows appended, then `conflict_ignore`)."""
    conflict_ignore: str
    message_select: str
    """id, session_id, role, content_json, metadata_json, created_at as ISO text, schema_version."""
    search_sessions: str
    """Params (pattern, limit); `{columns}` is formatted with the session columns."""
    usage_and_model: str
    """Params (session_id, role): each assistant message's usage JSON text, model, and the metadata's
    `model_calls` and `unpriced_calls` (messages/call_spend.py; NULL when absent)."""
    delete_expired_events: str
    """`{expired}` is formatted with the retention clause; params end with the batch size."""
    session_for_append: str
    """Param (session_id): tool_id_map_json, total_cost_usd, holding the session row until commit
    (PostgreSQL: FOR UPDATE; SQLite's BEGIN IMMEDIATE already serializes writers)."""
    transaction_lock: str
    """Param (key: int), first in a transaction: held until it ends, so transactions taking the
    same key run one at a time across processes (PostgreSQL: a transaction-scoped advisory lock;
    SQLite: a no-op, BEGIN IMMEDIATE already serializes every writer)."""


class Database(Protocol):
    """What the stores need from a backend. Safe for one thread at a time (stores hold a lock)."""

    backend: Literal["sqlite", "postgres"]
    location: Path | str
    """The SQLite file, or the PostgreSQL URL with its password removed (for messages)."""
    statements: Statements
    duplicate_error: type[BaseException] | tuple[type[BaseException], ...]
    """What the driver raises for a primary-key or unique violation."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows: ...
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...
    def transaction(self) -> AbstractContextManager[None]:
        """All statements inside commit together or not at all; driver errors become StoreErrors."""
        ...

    def errors(self) -> AbstractContextManager[None]:
        """Driver errors raised inside become the matching StoreError."""
        ...

    @property
    def in_transaction(self) -> bool: ...
    def schema_version(self) -> int: ...
    def close(self) -> None: ...


def is_postgres_url(location: Location) -> bool:
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def redact_url(url: str) -> str:
    """The URL without its password, safe for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    user = parts.username or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _configured_url(home: Path) -> str | None:
    path = home / "config.yaml"
    if not path.is_file():
        return None
    import yaml  # only when a config.yaml exists: listings of a default home skip PyYAML

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None  # the config loader reports a broken file with its own error
    value = data.get("database_url") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def database_location(location: Location | None = None) -> Location:
    """`location` if given, else METIS_DATABASE_URL, else `database_url:` in config.yaml, else
    METIS_HOME/metis.db. `sqlite:///path` becomes the path."""
    from metis_core.store.sqlite.connection import default_db_path, metis_home

    chosen: Location | None = location
    if chosen is None:
        chosen = os.environ.get(DATABASE_URL_ENV) or _configured_url(metis_home()) or default_db_path()
    if isinstance(chosen, str) and chosen.startswith("sqlite://"):
        return Path(chosen.removeprefix("sqlite://"))
    if isinstance(chosen, str) and not is_postgres_url(chosen):
        if "://" in chosen:  # another database's URL would otherwise become a SQLite file of that name
            raise ConfigError(f"{redact_url(chosen)} is not a database metis can use: give a postgresql:// URL, "
                              "sqlite:///path or a file path (METIS_DATABASE_URL, database_url: or --url)")
        return Path(chosen)
    return chosen


def open_backend(location: Location | SharedDatabase | None = None) -> Database:
    """Open (and migrate) the database at `location` (see `database_location`); a `SharedDatabase`
    hands out a view on its pool (PostgreSQL) or a connection of the store's own (SQLite)."""
    if isinstance(location, SharedDatabase):
        return location.open()
    where = database_location(location)
    if is_postgres_url(where):
        from metis_core.store.postgres.database import PostgresDatabase

        return PostgresDatabase(str(where))
    from metis_core.store.sqlite.database import SqliteDatabase

    return SqliteDatabase(Path(where))


def pool_size_setting(configured: int | None = None) -> int:
    """Connections one process opens at most on PostgreSQL: METIS_DATABASE_POOL_SIZE, else
    `configured` (`database_pool_size:` in config.yaml), else 8. At least 2 (one for a store's open
    transaction, one for the trace writer meanwhile); anything else is a ConfigError."""
    from metis_core.errors import ConfigError
    from metis_core.store.postgres.pool import POOL_MAX_SIZE, POOL_MIN_SIZE

    raw: object = os.environ.get(POOL_SIZE_ENV) or configured
    source = POOL_SIZE_ENV if os.environ.get(POOL_SIZE_ENV) else "database_pool_size"
    if raw is None:
        return POOL_MAX_SIZE
    try:
        size = int(str(raw).strip())
    except ValueError:
        size = 0
    if size < POOL_MIN_SIZE:
        raise ConfigError(f"{source} must be a whole number of at least {POOL_MIN_SIZE} (got {str(raw)[:20]!r}); "
                          f"unset it for the default of {POOL_MAX_SIZE}")
    return size


class SharedDatabase:
    """One database location for all the stores of one process (a Runtime's sessions, trace, learning
    tables and gateway keys). On PostgreSQL every `open()` is a view on one connection pool: each store
    keeps its own transactions, the process holds one pool's connections. On SQLite every `open()` is
    a connection of its own to the file (SQLite keeps one transaction per connection, and a file
    connection costs no server slot). `close()` releases this object's hold on the pool; the pool
    closes once every view opened from it is closed too, in whatever order."""

    def __init__(self, location: Location | None = None, *, pool_size: int | None = None) -> None:
        """`pool_size`: the PostgreSQL pool's most connections (see `pool_size_setting`)."""
        where = database_location(location)
        self.backend: Literal["sqlite", "postgres"] = "postgres" if is_postgres_url(where) else "sqlite"
        self._path = Path(where) if self.backend == "sqlite" else None
        self._pool: Any = None
        self._released = False
        if self.backend == "postgres":
            from metis_core.store.postgres.database import open_shared_pool

            self._pool = open_shared_pool(str(where), max_size=pool_size_setting(pool_size))
        self.location: Path | str = self._path if self._path is not None else redact_url(str(where))
        """The SQLite file, or the URL without its password (for messages)."""

    @property
    def pool_size(self) -> int | None:
        """The PostgreSQL pool's most connections; None on SQLite."""
        return None if self._pool is None else int(self._pool.max_size)

    def open(self) -> Database:
        """A `Database` for one store (closing it never closes the others' connections)."""
        if self._released:
            from metis_core.errors import StoreError

            raise StoreError(f"the shared database {self.location} was closed; open a new one")
        if self._pool is not None:
            from metis_core.store.postgres.database import PostgresDatabase

            return PostgresDatabase(shared=self._pool)
        from metis_core.store.sqlite.database import SqliteDatabase

        assert self._path is not None
        return SqliteDatabase(self._path)

    def close(self) -> None:
        """Let go of the pool (idempotent); it closes when the last store opened from it closes."""
        if self._pool is not None and not self._released:
            self._released = True
            self._pool.release()
