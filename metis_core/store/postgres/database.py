"""`PostgresDatabase`: a psycopg 3 connection pool behind the `Database` protocol.

Portable `?` placeholders become `%s` (`?N` become named parameters). Outside a transaction each
statement borrows a pooled connection; a read that loses its connection is retried once on a
fresh one (reads are safe to repeat). A transaction binds one connection to the calling thread;
if it is lost, the server has rolled the transaction back and `DatabaseConnectionError` says so.
jsonb comes back as JSON text, so both backends hand the stores the same row values.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from metis_core.errors import DatabaseConnectionError, DatabaseDriverMissingError, StoreError
from metis_core.store.backend import Rows, redact_url
from metis_core.store.postgres import sql
from metis_core.store.postgres.sql import STATEMENTS

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.types.string import TextLoader
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise DatabaseDriverMissingError(
        "a postgresql:// database needs psycopg: pip install 'metis-core[postgres]'"
    ) from missing

_NUMBERED = re.compile(r"\?(\d+)")
POOL_MAX_SIZE = 8
CONNECT_TIMEOUT_SECONDS = 10.0


def to_pyformat(sql: str, params: Sequence[Any]) -> tuple[str, Sequence[Any] | dict[str, Any]]:
    """`?` / `?N` placeholders to psycopg's `%s` / `%(pN)s`; a literal `%` is doubled."""
    text = sql.replace("%", "%%")
    if _NUMBERED.search(text):
        return _NUMBERED.sub(r"%(p\1)s", text), {f"p{i}": value for i, value in enumerate(params, start=1)}
    return text.replace("?", "%s"), params


@dataclass
class _Result:
    rows: list[Any]
    rowcount: int
    _position: int = field(default=0)

    def fetchone(self) -> Any:
        if self._position >= len(self.rows):
            return None
        self._position += 1
        return self.rows[self._position - 1]

    def fetchall(self) -> list[Any]:
        rest, self._position = self.rows[self._position:], len(self.rows)
        return rest

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


def _configure(conn: psycopg.Connection[Any]) -> None:
    for name in ("json", "jsonb"):
        conn.adapters.register_loader(name, TextLoader)


def translate_pg_error(error: BaseException, where: str) -> StoreError:
    if isinstance(error, (psycopg.OperationalError, PoolTimeout)) and not isinstance(error, pg_errors.QueryCanceled):
        return DatabaseConnectionError(
            f"lost or could not open the connection to {where} ({type(error).__name__}); the open "
            "transaction, if any, was rolled back, so nothing half-written is kept; check that the "
            "server is up and reachable, then retry"
        )
    return StoreError(f"database error on {where}: {error}")


class PostgresDatabase:
    backend: Literal["sqlite", "postgres"] = "postgres"
    statements = STATEMENTS
    duplicate_error: type[BaseException] | tuple[type[BaseException], ...] = pg_errors.UniqueViolation

    def __init__(self, url: str, *, migrate: bool = True, max_size: int = POOL_MAX_SIZE) -> None:
        from metis_core.store.postgres import migrations

        self.url = url
        self.location: Any = redact_url(url)
        self._local = threading.local()
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, "connect_timeout": int(CONNECT_TIMEOUT_SECONDS)},
            configure=_configure,
            check=ConnectionPool.check_connection,
            open=False,
            name="metis",
        )
        try:
            # one direct connection first: a refused or unreachable server fails at once, not after
            # the pool's retry timeout; it also applies the pending migrations
            with psycopg.connect(url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_SECONDS)) as first:
                if migrate:
                    migrations.migrate(first, self.location)
            self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)
        except BaseException as error:
            self.pool.close()
            if isinstance(error, (psycopg.Error, PoolTimeout)):
                raise translate_pg_error(error, self.location) from error
            raise

    # --- statements ------------------------------------------------------------------------

    def _tx_conn(self) -> psycopg.Connection[Any] | None:
        return getattr(self._local, "conn", None)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        query, values = to_pyformat(sql, params)
        conn = self._tx_conn()
        if conn is not None:
            return self._run(conn, query, values)
        retry_safe = sql.lstrip().upper().startswith("SELECT")
        try:
            with self.pool.connection() as pooled:
                return self._run(pooled, query, values)
        except psycopg.OperationalError:
            if not retry_safe:
                raise
        with self.pool.connection() as pooled:  # the broken connection was discarded; once more
            return self._run(pooled, query, values)

    @staticmethod
    def _run(conn: psycopg.Connection[Any], query: str, values: Any) -> _Result:
        cursor = conn.execute(query, values)
        rows = cursor.fetchall() if cursor.description is not None else []
        return _Result(rows, cursor.rowcount)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        query, _ = to_pyformat(sql, ())
        conn = self._tx_conn()
        if conn is not None:
            conn.cursor().executemany(query, list(rows))
            return
        with self.pool.connection() as pooled, pooled.transaction():
            pooled.cursor().executemany(query, list(rows))

    def copy_events(self, rows: Sequence[Sequence[Any]]) -> None:
        """Store event rows in one transaction through COPY (about twice the rate of multi-row
        INSERTs, measured); ids already stored are ignored. Errors come back as StoreErrors."""
        with self._errors(), self.pool.connection() as conn, conn.transaction():
            conn.execute(sql.STAGE_EVENTS)
            with conn.cursor().copy(sql.COPY_EVENTS_TO_STAGE) as copy:
                for row in rows:
                    copy.write_row(row)
            conn.execute(sql.MOVE_STAGED_EVENTS)

    # --- transactions and errors -----------------------------------------------------------

    def transaction(self) -> AbstractContextManager[None]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        if self._tx_conn() is not None:  # nested: a savepoint-free join of the outer transaction
            yield
            return
        try:
            with self.pool.connection() as conn:
                self._local.conn = conn
                try:
                    with conn.transaction():
                        yield
                finally:
                    self._local.conn = None
        except psycopg.Error as error:
            raise translate_pg_error(error, self.location) from error
        except PoolTimeout as error:
            raise translate_pg_error(error, self.location) from error

    def errors(self) -> AbstractContextManager[None]:
        return self._errors()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except (psycopg.Error, PoolTimeout) as error:
            raise translate_pg_error(error, self.location) from error

    @property
    def in_transaction(self) -> bool:
        return self._tx_conn() is not None

    def schema_version(self) -> int:
        from metis_core.store.postgres.migrations import applied_version

        with self.errors(), self.pool.connection() as conn:
            return applied_version(conn)

    def close(self) -> None:
        self.pool.close()
