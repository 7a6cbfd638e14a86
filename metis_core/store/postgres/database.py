"""`PostgresDatabase`: a view on a psycopg 3 connection pool behind the `Database` protocol.

Each view leases a `SharedPool` (its own, or one a runtime shares between its stores) and keeps its
own transactions; closing it releases the lease. Portable `?` placeholders become `%s` (`?N` named
parameters). Outside a transaction a statement borrows a pooled connection; a read that loses it is
retried once on a fresh one. A transaction binds one connection to the calling thread; if it is
lost, the server rolled it back and `DatabaseConnectionError` says so. jsonb comes back as JSON text.
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
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise DatabaseDriverMissingError(
        "a postgresql:// database needs psycopg: pip install 'metis-core[postgres]'"
    ) from missing

from metis_core.store.postgres.pool import POOL_MAX_SIZE, SharedPool

_NUMBERED = re.compile(r"\?(\d+)")


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


def translate_pg_error(error: BaseException, where: str) -> StoreError:
    if isinstance(error, (psycopg.OperationalError, PoolTimeout)) and not isinstance(error, pg_errors.QueryCanceled):
        return DatabaseConnectionError(
            f"lost or could not open the connection to {where} ({type(error).__name__}); the open "
            "transaction, if any, was rolled back, so nothing half-written is kept; check that the "
            "server is up and reachable, then retry"
        )
    return StoreError(f"database error on {where}: {error}")


def open_shared_pool(url: str, *, max_size: int) -> SharedPool:
    """A pool several views lease (`PostgresDatabase(shared=...)`), migrated; errors named."""
    try:
        return SharedPool(url, max_size=max_size)
    except (psycopg.Error, PoolTimeout) as error:
        raise translate_pg_error(error, redact_url(url)) from error


class PostgresDatabase:
    backend: Literal["sqlite", "postgres"] = "postgres"
    statements = STATEMENTS
    duplicate_error: type[BaseException] | tuple[type[BaseException], ...] = pg_errors.UniqueViolation

    def __init__(
        self, url: str | None = None, *, migrate: bool = True, max_size: int = POOL_MAX_SIZE,
        shared: SharedPool | None = None,
    ) -> None:
        """A view on `shared` (a lease on a pool other views use too), or on a pool of its own at
        `url` (`max_size` connections; migrated first unless `migrate=False`)."""
        self._local = threading.local()
        self._released = False
        try:
            if shared is None:
                if url is None:
                    raise ValueError("PostgresDatabase needs a url or a shared pool")
                shared = SharedPool(url, migrate=migrate, max_size=max_size)  # holding its first lease
                self.pool: ConnectionPool = shared.connections
            else:
                self.pool = shared.lease()
        except (psycopg.Error, PoolTimeout) as error:
            raise translate_pg_error(error, redact_url(url or "")) from error
        self.shared = shared
        self.location: Any = shared.location

    # --- statements ------------------------------------------------------------------------

    def _connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        if self._released:  # the pool may live on for other views; this one is done
            raise StoreError(f"this store's connection to {self.location} was closed; open the store again")
        return self.pool.connection()

    def _tx_conn(self) -> psycopg.Connection[Any] | None:
        return getattr(self._local, "conn", None)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        query, values = to_pyformat(sql, params)
        conn = self._tx_conn()
        if conn is not None:
            return self._run(conn, query, values)
        retry_safe = sql.lstrip().upper().startswith("SELECT")
        try:
            with self._connection() as pooled:
                return self._run(pooled, query, values)
        except psycopg.OperationalError:
            if not retry_safe:
                raise
        with self._connection() as pooled:  # the broken connection was discarded; once more
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
        with self._connection() as pooled, pooled.transaction():
            pooled.cursor().executemany(query, list(rows))

    def copy_events(self, rows: Sequence[Sequence[Any]]) -> None:
        """Store event rows in one transaction through COPY (about twice the rate of multi-row
        INSERTs, measured); ids already stored are ignored. Errors come back as StoreErrors."""
        with self._errors(), self._connection() as conn, conn.transaction():
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
            with self._connection() as conn:
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

        with self.errors(), self._connection() as conn:
            return applied_version(conn)

    def close(self) -> None:
        """Release this view's lease (idempotent); the pool closes with its last view."""
        if not self._released:
            self._released = True
            self.shared.release()
