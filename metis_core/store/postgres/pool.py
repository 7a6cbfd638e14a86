"""`SharedPool`: one psycopg connection pool that several `PostgresDatabase` views lease.

A runtime's stores (sessions, trace, learning, gateway keys) each hold their own view, so each keeps
its own transactions, thread binding and lock, while the connections come from one pool sized once
per process. The pool closes when the last lease is released, whatever order the stores close in.
Opening it applies the pending migrations once, on one direct connection.
"""

from __future__ import annotations

import threading
from typing import Any

from metis_core.errors import DatabaseDriverMissingError, StoreError
from metis_core.store.backend import redact_url

try:
    import psycopg
    from psycopg.types.string import TextLoader
    from psycopg_pool import ConnectionPool
except ImportError as missing:  # pragma: no cover - exercised only without the extra
    raise DatabaseDriverMissingError(
        "a postgresql:// database needs psycopg: pip install 'metis-core[postgres]'"
    ) from missing

POOL_MAX_SIZE = 8
"""Connections one process opens at most when nothing configures it (`database_pool_size:`)."""
POOL_MIN_SIZE = 2
"""A view in a transaction holds its connection; the trace writer's thread needs another meanwhile."""
CONNECT_TIMEOUT_SECONDS = 10.0
APPLICATION_NAME = "metis"
"""What `pg_stat_activity.application_name` shows for metis's connections."""


def _configure(conn: psycopg.Connection[Any]) -> None:
    for name in ("json", "jsonb"):
        conn.adapters.register_loader(name, TextLoader)


class SharedPool:
    """A connection pool with a count of its users; the release of the last one closes it. Whoever
    creates it holds the first lease."""

    def __init__(self, url: str, *, migrate: bool = True, max_size: int = POOL_MAX_SIZE) -> None:
        """Open the pool (one idle connection) after migrating on a direct connection, so a refused or
        unreachable server fails at once, not after the pool's retry timeout. Driver errors propagate
        (the caller names them); nothing is left open when opening fails."""
        from metis_core.store.postgres import migrations

        if max_size < 1:
            raise ValueError("a pool needs at least one connection")
        self.location = redact_url(url)
        self.max_size = max_size
        self._leases = 1
        self._closed = False
        self._lock = threading.Lock()
        self.connections = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, "connect_timeout": int(CONNECT_TIMEOUT_SECONDS),
                    "application_name": APPLICATION_NAME},
            configure=_configure,
            check=ConnectionPool.check_connection,
            open=False,
            name="metis",
        )
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_SECONDS),
                                 application_name=APPLICATION_NAME) as first:
                if migrate:
                    migrations.migrate(first, self.location)
            self.connections.open(wait=True, timeout=CONNECT_TIMEOUT_SECONDS)
        except BaseException:
            self.connections.close()
            raise

    @property
    def leases(self) -> int:
        with self._lock:
            return self._leases

    @property
    def closed(self) -> bool:
        with self._lock:
            return self._closed

    def lease(self) -> ConnectionPool:
        """The pool, counted as used until `release`; a closed pool is refused."""
        with self._lock:
            if self._closed:
                raise StoreError(f"the connection pool of {self.location} is closed; open the store again")
            self._leases += 1
            return self.connections

    def release(self) -> None:
        """One view is done; the last one closes the pool (waiting for connections in use to return)."""
        with self._lock:
            if self._closed:
                return
            self._leases -= 1
            if self._leases:
                return
            self._closed = True
        self.connections.close()
