"""`SqliteDatabase`: one sqlite3 connection behind the `Database` protocol."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Literal

from metis_core.store.backend import Rows
from metis_core.store.sqlite.connection import open_database, sqlite_errors, write_transaction
from metis_core.store.sqlite.migrations import user_version
from metis_core.store.sqlite.sql import STATEMENTS


class SqliteDatabase:
    backend: Literal["sqlite", "postgres"] = "sqlite"
    statements = STATEMENTS
    duplicate_error: type[BaseException] | tuple[type[BaseException], ...] = sqlite3.IntegrityError

    def __init__(self, path: Path) -> None:
        self.conn, self.path = open_database(path)
        self.location: Path | str = self.path

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def transaction(self) -> AbstractContextManager[None]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        with write_transaction(self.conn, self.path):
            yield

    def errors(self) -> AbstractContextManager[None]:
        return sqlite_errors(self.path)

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def schema_version(self) -> int:
        return user_version(self.conn)

    def close(self) -> None:
        self.conn.close()
