"""`EventBatcher`: the trace's write path on a networked database (PostgreSQL).

The bus's fast-path handler only appends the row to an in-memory batch and returns; a writer
thread sends each batch in one transaction — a large one through COPY and `INSERT .. SELECT .. ON
CONFLICT DO NOTHING` when the database offers `copy_events` (PostgreSQL), a small one as a multi-row
INSERT — so the bus never waits on a network round trip. Inserts ignore stored ids, so a batch
whose connection dropped is simply sent again (retrying is safe); `flush()` waits for everything
handed over so far and raises the last write error, if the batch could not be written.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from metis_core.errors import DatabaseConnectionError, StoreError
from metis_core.store.backend import Database
from metis_core.trace.event_rows import EventRow

log = logging.getLogger("metis_core.trace")

ROWS_PER_STATEMENT = 500
COPY_FROM_ROWS = 64
"""Smaller batches go as one multi-row INSERT: one round trip, where COPY through a staging table takes three."""
WRITE_ATTEMPTS = 3


class EventBatcher:
    def __init__(self, db: Database, *, batch_rows: int, interval: float) -> None:
        self._db = db
        self._batch_rows = batch_rows
        self._interval = interval
        self._rows: list[EventRow] = []
        self._in_flight = 0
        self._error: StoreError | None = None
        self._closing = False
        self._flush_requested = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="metis-trace-batcher", daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        with self._cond:
            return len(self._rows) + self._in_flight

    def add(self, row: EventRow) -> None:
        with self._cond:
            self._rows.append(row)
            if len(self._rows) >= self._batch_rows:
                self._cond.notify_all()

    def add_many(self, rows: Sequence[EventRow]) -> None:
        with self._cond:
            self._rows.extend(rows)
            self._cond.notify_all()

    def flush(self) -> None:
        """Wait until every row added so far is committed; raise the write error if one stuck."""
        with self._cond:
            self._error = None
            self._flush_requested = True
            self._cond.notify_all()
            self._cond.wait_for(lambda: (not self._rows and not self._in_flight) or self._error is not None)
            if self._error is not None:
                raise self._error

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self._cond:
                self._closing = True
                self._cond.notify_all()
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(
                    lambda: self._closing or self._flush_requested or len(self._rows) >= self._batch_rows,
                    self._interval,
                )
                self._flush_requested = False
                if self._closing and not self._rows:
                    return
                batch, self._rows = self._rows, []
                self._in_flight = len(batch)
            error: StoreError | None = None
            if batch:
                error = self._write(batch)
            with self._cond:
                if error is not None:  # keep the rows, in order, for the next attempt
                    self._rows[:0] = batch
                    self._error = error
                self._in_flight = 0
                self._cond.notify_all()
            if error is not None:
                if self._closing:
                    return
                time.sleep(self._interval * 10)

    def _write(self, batch: list[EventRow]) -> StoreError | None:
        statements = self._db.statements
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                copy_events = getattr(self._db, "copy_events", None)
                if copy_events is not None and len(batch) >= COPY_FROM_ROWS:
                    copy_events(batch)
                    return None
                with self._db.transaction():
                    for start in range(0, len(batch), ROWS_PER_STATEMENT):
                        chunk = batch[start:start + ROWS_PER_STATEMENT]
                        values = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
                        params = [value for row in chunk for value in row]
                        self._db.execute(statements.insert_events_prefix + values + statements.conflict_ignore, params)
                return None
            except DatabaseConnectionError as error:  # rolled back; the inserts are idempotent
                log.warning("trace batch of %d events: %s (attempt %d)", len(batch), error, attempt)
                if attempt == WRITE_ATTEMPTS:
                    return error
                time.sleep(0.05 * attempt)
            except StoreError as error:
                log.error("trace batch of %d events could not be written: %s", len(batch), error)
                return error
        return None
