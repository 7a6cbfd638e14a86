"""`LiveFeed`: every event any process stores in a PostgreSQL trace, delivered here in commit order.

A thread LISTENs for the events table's NOTIFYs and reads the new rows after the last position it
delivered, handing each event to every subscriber; when the connection drops it reconnects with
backoff and resumes from that position, so nothing is lost or delivered twice. SQLite has no feed
(`open_live_feed` returns None): there, the process's own bus is the live source.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from metis_core.errors import DatabaseConnectionError
from metis_core.events.envelope import Event
from metis_core.store.backend import Location, is_postgres_url
from metis_core.trace.event_rows import event_from_row

if TYPE_CHECKING:
    from metis_core.store.postgres.event_positions import EventPositions, Position

log = logging.getLogger("metis_core.trace")

READ_BATCH = 1_000
IDLE_WAIT = 1.0
"""Seconds between checks when no NOTIFY comes (also how soon a silently dead connection is found)."""
HELD_BACK_WAIT = 0.02
"""Seconds between reads while committed rows wait behind an older transaction still running."""
BACKOFF_FIRST, BACKOFF_MAX = 0.05, 2.0
START_TIMEOUT = 10.0

Deliver = Callable[[Event], None]


class LiveFeed:
    """Open with `open_live_feed(url)`; `subscribe(deliver)` returns a handle and the position up to
    which the subscriber must replay from the store (`replay`); everything after it is delivered
    live, on the feed's thread (so `deliver` must not block). `close()` stops the thread."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.position: Position = (0, 0)
        self.reconnects = 0
        self._subscribers: dict[int, Deliver] = {}
        self._next_handle = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._listener: EventPositions | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="metis-live-feed", daemon=True)

    def start(self) -> LiveFeed:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT) or self._error is not None:
            self.close()
            raise DatabaseConnectionError(
                f"the live event feed could not listen on the database ({type(self._error).__name__}); "
                "check that the PostgreSQL server is up and reachable, then start again")
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    # --- subscribers -----------------------------------------------------------------------

    def subscribe(self, deliver: Deliver) -> tuple[int, Position]:
        with self._lock:
            self._next_handle += 1
            self._subscribers[self._next_handle] = deliver
            return self._next_handle, self.position

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def unsubscribe(self, handle: int) -> None:
        with self._lock:
            self._subscribers.pop(handle, None)

    def replay(self, last_event_id: str, upto: Position, *, session_ids: Sequence[str] | None,
               types: Sequence[str] | None, limit: int) -> list[Event]:
        """Stored events after the one with `last_event_id` (\"\" = from the start) up to `upto`,
        in commit order, on a connection of its own. An id no longer stored keeps the ids past it."""
        from metis_core.store.postgres.event_positions import START, EventPositions

        reader = EventPositions(self.url)
        try:
            after = reader.position_of(last_event_id) if last_event_id else None
            rows = reader.between(after or START, upto, after_id=last_event_id if after is None and last_event_id
                                  else None, session_ids=session_ids, types=types, limit=limit)
        finally:
            reader.close()
        return [event_from_row(row) for row in rows]

    # --- the feed's thread -----------------------------------------------------------------

    def _run(self) -> None:
        backoff = BACKOFF_FIRST
        while not self._stop.is_set():
            try:
                self._listen()
                backoff = BACKOFF_FIRST
            except Exception as error:  # a dropped connection or a refused connect: resume after a pause
                self._error = None if self._ready.is_set() else error
                if not self._ready.is_set():
                    self._ready.set()  # start() reports the failure
                    return
                self.reconnects += 1
                log.warning("live feed lost its database connection (%s); reconnecting", type(error).__name__)
            finally:
                self._close_listener()
            self._stop.wait(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)

    def _listen(self) -> None:
        from metis_core.store.postgres.event_positions import EventPositions

        self._listener = listener = EventPositions(self.url, listen=True)
        if not self._ready.is_set():
            self.position = listener.last()
            self._ready.set()
        wait = 0.0
        while not self._stop.is_set():
            announced = listener.wait(wait) if wait else []
            self._catch_up(listener)
            held_back = any(p > self.position for p in announced) or listener.any_after(self.position)
            wait = HELD_BACK_WAIT if held_back else IDLE_WAIT

    def _catch_up(self, listener: EventPositions) -> None:
        while True:
            rows = listener.after(self.position, READ_BATCH)
            if not rows:
                return
            events = [event_from_row(row) for _, row in rows]
            with self._lock:
                for event in events:
                    for deliver in self._subscribers.values():
                        try:
                            deliver(event)
                        except Exception:  # one subscriber's fault must not stop (or repeat) the others
                            log.exception("live feed subscriber failed on event %s", event.id)
                self.position = rows[-1][0]
            if len(rows) < READ_BATCH:
                return

    def _close_listener(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to release
                listener.close()


def open_live_feed(location: Location) -> LiveFeed | None:
    """A started feed for a PostgreSQL URL; None for SQLite (the bus is the live source there)."""
    if not is_postgres_url(location):
        return None
    assert isinstance(location, str)
    return LiveFeed(location).start()
