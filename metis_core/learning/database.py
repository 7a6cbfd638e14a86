"""The learning layer's connection to the runtime's database, on whichever backend the stores use.

The tables (eval_verdicts, pattern_fingerprints, pattern_outcomes) are migration 5
(`learning_tables`) on SQLite and PostgreSQL alike. This opens its own `Database` (store/backend)
at the same location (on PostgreSQL a view on the runtime's one pool); batch subscribers write
from their own threads, so every use holds a lock. Every write is one transaction that first takes
the learning writer lock, so processes sharing one PostgreSQL database write one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from metis_core.store.backend import Database, Location, SharedDatabase, open_backend

WRITER_LOCK_KEY = 0x6D6574697331  # "metis1": held by every learning write transaction (PostgreSQL)


class LearningDatabase:
    def __init__(self, location: Location | SharedDatabase | None = None) -> None:
        """`location`: a SQLite file or a postgresql:// URL; by default METIS_DATABASE_URL,
        `database_url:` in config.yaml, then METIS_HOME/metis.db (as the stores); a runtime's
        `SharedDatabase` (its pool on PostgreSQL)."""
        self._db: Database = open_backend(location)
        self._lock = threading.RLock()

    @property
    def backend(self) -> str:
        return self._db.backend

    @property
    def location(self) -> Path | str:
        """The SQLite file, or the PostgreSQL URL without its password."""
        return self._db.location

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, self._db.errors():
            return [tuple(row) for row in self._db.execute(sql, params).fetchall()]

    @contextmanager
    def writing(self) -> Iterator[Database]:
        """One transaction, all or nothing, serialized with every other learning writer; driver
        errors (a lost connection included) come out as StoreErrors."""
        with self._lock, self._db.transaction():
            self._db.execute(self._db.statements.transaction_lock, (WRITER_LOCK_KEY,))
            yield self._db

    def close(self) -> None:
        with self._lock:
            self._db.close()
