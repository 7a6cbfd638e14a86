"""The learning layer's connection to metis.db: its own connection and lock, same file.

The tables (eval_verdicts, pattern_fingerprints, pattern_outcomes) are created by migration 4
in store/migrations.py. Batch subscribers write from their own threads, so every use holds
the lock; writes run in `write_transaction`.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metis_core.store.db import open_database, sqlite_errors, write_transaction


class LearningDatabase:
    def __init__(self, db_path: Path | str) -> None:
        self._conn, self.path = open_database(db_path)
        self._lock = threading.RLock()

    def rows(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, sqlite_errors(self.path):
            return list(self._conn.execute(sql, params).fetchall())

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        with self._lock, write_transaction(self._conn, self.path) as conn:
            yield conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()
