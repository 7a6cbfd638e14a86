"""`TraceStore`: the events table (SQLite or PostgreSQL), written by a fast-path bus subscriber.

On SQLite the subscriber buffers rows and inserts them, many per statement, in one transaction when
the bus queue is momentarily empty, after `commit_every` events or after `commit_interval` seconds
(an idle flusher covers a stopped burst); `append` always commits, and reads see buffered rows. On
PostgreSQL the handler hands rows to an `EventBatcher` whose thread does the network writes. Replay
and queries read the same table. Retention, gap detection, backup and audit export live in their
own modules.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from metis_core.errors import StoreError
from metis_core.events.bus import EventBus, EventFilter, Subscription, SubscriptionHandle
from metis_core.events.envelope import Event
from metis_core.store.backend import Database, Location, SharedDatabase, open_backend
from metis_core.store.multi_row_insert import multi_row_inserts
from metis_core.store.records import to_us
from metis_core.trace.event_batcher import EventBatcher
from metis_core.trace.event_rows import EVENT_COLUMNS, EventRow, event_from_row, event_row

if TYPE_CHECKING:
    from metis_core.trace.gaps import Gap, ParentCheck
    from metis_core.trace.retention import ProgressCallback, PurgeResult

log = logging.getLogger("metis_core.trace")

SUBSCRIPTION_NAME = "trace-store"
MAX_BUFFERED_ROWS = 100_000
"""Rows kept for another attempt while the database refuses writes; past this they are dropped (logged)."""


class _HasEmit(Protocol):
    def emit(self, event: Event) -> None: ...


EventSink = _HasEmit | Callable[[Event], object]
"""Where the store sends the events it produces (bus.gap_detected, trace.swept): a bus or a callable."""


def emitter(sink: EventSink) -> Callable[[Event], object]:
    emit = getattr(sink, "emit", None)
    return emit if callable(emit) else sink  # type: ignore[return-value]


class TraceStore:
    """The persisted trace. Thread-safe: the bus worker writes while other threads read."""

    def __init__(
        self,
        db_path: Location | SharedDatabase | None = None,
        *,
        commit_every: int = 100,
        commit_interval: float = 0.02,
    ) -> None:
        if commit_every < 1 or commit_interval <= 0:
            raise ValueError("commit_every must be >= 1 and commit_interval > 0")
        self._db: Database = open_backend(db_path)
        self.path = self._db.location
        self._insert = self._db.statements.insert_event
        self._rows: list[EventRow] = []
        """SQLite: rows handed to the store and not yet inserted (written at the next commit or read)."""
        self._batcher: EventBatcher | None = None
        if self._db.backend == "postgres":
            self._batcher = EventBatcher(self._db, batch_rows=commit_every, interval=commit_interval)
        self.commit_every = commit_every
        self.commit_interval = commit_interval
        self._lock = threading.RLock()
        self._pending = 0
        self._pending_since = 0.0
        self._bus: EventBus | None = None
        self._stop = threading.Event()
        self._flusher: threading.Thread | None = None
        self._closed = False

    # --- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Commit whatever is pending, stop the flusher, close the connection. Idempotent."""
        self._stop.set()
        if self._flusher is not None:
            self._flusher.join(timeout=2)
        with self._lock:
            if self._closed:
                return
            try:
                if self._batcher is not None:
                    self._batcher.close()
                self._commit_pending()
            finally:
                self._closed = True
                self._db.close()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    @contextmanager
    def connection(self) -> Iterator[Database]:
        """The database with nothing pending, held exclusively (retention, gap scans)."""
        with self._lock:
            self._commit_pending()
            yield self._db

    # --- writing ---------------------------------------------------------------------------

    def append(self, event: Event) -> None:
        """Insert one event and commit (with anything the subscriber had pending)."""
        if self._batcher is not None:
            self._check_open()
            self._batcher.add(event_row(event))
            self._batcher.flush()
            return
        with self._lock:
            self._buffer(event_row(event))
            self._commit_pending()

    def append_many(self, events: Iterable[Event]) -> int:
        """Insert events in one transaction; returns how many."""
        rows = [event_row(event) for event in events]
        if self._batcher is not None:
            self._check_open()
            self._batcher.add_many(rows)
            self._batcher.flush()
            return len(rows)
        with self._lock:
            for row in rows:
                self._buffer(row)
            self._commit_pending()
        return len(rows)

    def write_event(self, event: Event) -> None:
        """The fast-path handler: buffer the row now, insert and commit when the batch policy says so."""
        if self._batcher is not None:  # the batcher's thread does the network write
            self._batcher.add(event_row(event))
            return
        row = event_row(event)
        with self._lock:  # `_buffer` inlined (this runs for every event), then the batch policy
            if self._closed:
                self._check_open()
            now = time.monotonic()
            if not self._pending:
                self._pending_since = now
            self._rows.append(row)
            self._pending += 1
            bus = self._bus
            if (
                self._pending >= self.commit_every
                or (bus is not None and bus.queue_depth <= 1)  # this event is the last queued
                or now - self._pending_since >= self.commit_interval
            ):
                self._commit_pending()
            elif self._flusher is None:
                self._start_flusher()

    def _buffer(self, row: EventRow) -> None:
        """SQLite, with the lock held: keep `row` for the next insert."""
        self._check_open()
        if not self._pending:
            self._pending_since = time.monotonic()
        self._rows.append(row)
        self._pending += 1

    def flush(self) -> None:
        """Commit what the subscriber has written so far (other connections then see it)."""
        with self._lock:
            self._commit_pending()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the trace store on {self.path} is closed")

    def _insert_buffered(self) -> None:
        """SQLite, with the lock held: insert the buffered rows into the open write transaction (begun
        here if needed), many per statement. If the database refuses them (locked past the busy
        timeout, disk full), they stay buffered for the next attempt and the error is raised."""
        rows = self._rows
        if not rows:
            return
        self._check_open()
        try:
            with self._db.errors():
                if not self._db.in_transaction:
                    self._db.execute("BEGIN IMMEDIATE")
                for statement, params in multi_row_inserts(self._insert, rows):
                    self._db.execute(statement, params)  # inserts ignore stored ids: a retried row is harmless
        except StoreError:
            if len(rows) > MAX_BUFFERED_ROWS:
                log.error("trace store: dropping %d buffered events the database keeps refusing", len(rows))
                self._rows, self._pending = [], 0
            raise
        self._rows = []

    def _commit_pending(self) -> None:
        if self._batcher is not None and not self._closed:
            self._batcher.flush()
        elif not self._closed:
            self._insert_buffered()
            if self._db.in_transaction:
                with self._db.errors():
                    self._db.execute("COMMIT")
        self._pending = 0

    def _start_flusher(self) -> None:
        self._flusher = threading.Thread(target=self._flush_when_idle, name="metis-trace-flusher", daemon=True)
        self._flusher.start()

    def _flush_when_idle(self) -> None:
        while not self._stop.wait(self.commit_interval):
            with self._lock:
                if self._pending and time.monotonic() - self._pending_since >= self.commit_interval:
                    try:
                        self._commit_pending()
                    except StoreError as error:
                        log.error("trace store could not commit buffered events: %s", error)

    # --- the bus ---------------------------------------------------------------------------

    def subscription(self, bus: EventBus | None = None) -> Subscription:
        """The fast-path, all-events subscription. Given the bus, commits when its queue drains."""
        if bus is not None:
            self._bus = bus
        return Subscription(filter=EventFilter(), handler=self.write_event, name=SUBSCRIPTION_NAME, fast_path=True)

    def attach(self, bus: EventBus) -> SubscriptionHandle:
        """Subscribe this store to `bus`; unsubscribe with the returned handle."""
        return bus.subscribe(self.subscription(bus))

    # --- reading ---------------------------------------------------------------------------

    def get(self, event_id: str) -> Event | None:
        rows = self._select("WHERE id = ?", [event_id])
        return rows[0] if rows else None

    def replay(self, session_id: str, after_id: str | None = None, limit: int | None = None) -> list[Event]:
        """The session's events after `after_id` (all when None), in id order (spec §5.3)."""
        return self._select("WHERE session_id = ? AND id > ? ORDER BY id", [session_id, after_id or ""], limit)

    def events(
        self,
        *,
        session_id: str | None = None,
        types: Iterable[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        turn_id: str | None = None,
        after_id: str | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        """Events matching every given filter, in id order. `until` is exclusive; `after_id` too
        (the events after the one a reconnecting client saw last)."""
        clauses, params = event_filters(session_id=session_id, types=types, since=since, until=until, turn_id=turn_id)
        if after_id is not None:
            clauses.append("id > ?")
            params.append(after_id)
        where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
        return self._select(f"{where}ORDER BY id", params, limit)

    def count(self) -> int:
        with self._lock, self._db.errors():
            self._commit_pending()
            return int(self._db.execute("SELECT COUNT(*) FROM events").fetchone()[0])

    def _select(self, tail: str, params: list[Any], limit: int | None = None) -> list[Event]:
        if limit is not None:
            tail += " LIMIT ?"
            params = [*params, limit]
        with self._lock, self._db.errors():
            if self._batcher is not None:  # read your own writes, as SQLite's open transaction does
                self._batcher.flush()
            elif not self._closed:
                self._insert_buffered()
            rows = self._db.execute(f"SELECT {EVENT_COLUMNS} FROM events {tail}", params).fetchall()
        return [event_from_row(row) for row in rows]

    # --- consistency and retention (see gaps.py, retention.py) ------------------------------

    def detect_gaps(self) -> list[Gap]:
        from metis_core.trace.gaps import detect_gaps

        with self.connection() as conn, conn.errors():
            return detect_gaps(conn)

    def check_parents(self) -> ParentCheck:
        """Store-wide: does every event's parent exist (`metis trace verify --store`)? Read-only."""
        from metis_core.trace.gaps import check_parents

        with self.connection() as conn, conn.errors():
            return check_parents(conn)

    def check_gaps(self, sink: EventSink) -> list[Gap]:
        """Startup check: emit bus.gap_detected for each gap not reported before; return them."""
        from metis_core.trace.gaps import report_new_gaps

        return report_new_gaps(self, emitter(sink))

    def known_gaps(self, session_id: str | None = None) -> list[Gap]:
        """Gaps already reported by `check_gaps` (for replay to flag an incomplete session)."""
        from metis_core.trace.gaps import known_gaps

        with self.connection() as conn, conn.errors():
            return known_gaps(conn, session_id)

    def prune(
        self,
        retention_days: float = 90,
        *,
        dry_run: bool = False,
        now: datetime | None = None,
        sink: EventSink | None = None,
        progress: ProgressCallback | None = None,
    ) -> PurgeResult:
        """Delete non-audit events older than the cutoff; see `retention.prune_trace`."""
        from metis_core.trace.retention import prune_trace

        return prune_trace(
            self,
            retention_days,
            dry_run=dry_run,
            now=now,
            emit=emitter(sink) if sink is not None else None,
            progress=progress,
        )


def event_filters(
    *,
    session_id: str | None = None,
    types: Iterable[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    turn_id: str | None = None,
) -> tuple[list[str], list[Any]]:
    """WHERE clauses and parameters shared by queries and the audit export."""
    clauses: list[str] = []
    params: list[Any] = []
    if session_id is not None:
        clauses.append("session_id = ?")
        params.append(session_id)
    if types is not None:
        wanted = sorted(set(types))
        clauses.append(f"type IN ({', '.join('?' * len(wanted))})" if wanted else "1 = 0")
        params.extend(wanted)
    if since is not None:
        clauses.append("timestamp_us >= ?")
        params.append(to_us(since))
    if until is not None:
        clauses.append("timestamp_us < ?")
        params.append(to_us(until))
    if turn_id is not None:
        clauses.append("turn_id = ?")
        params.append(turn_id)
    return clauses, params
