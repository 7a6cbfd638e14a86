"""`ClientStream`: one network client's view of the bus — a batch subscription feeding a bounded
queue, with replay from the trace store on reconnect.

Order of operations makes resumption exact: subscribe first (live events start queueing), flush
the bus (everything emitted before is in the trace store), replay after the client's last id,
then serve the queue skipping ids the replay already sent — no gap, no duplicate. The handler
runs on the subscription's own worker, never on the fast path; when the queue is full the client
is marked overflowed, and the caller drops it with reason `removed_after_errors`. Given a
PostgreSQL `LiveFeed`, the feed (every process's stored events) replaces the bus as the live source:
subscribing returns the feed's position, and the replay reads the store up to exactly that position.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque

from metis_core.events.bus import EventBus, UnsubscribeReason
from metis_core.events.envelope import Event
from metis_core.events.subscription import Subscription, SubscriptionHandle
from metis_core.ids import new_ulid
from metis_core.server.stream_filter import StreamFilter
from metis_core.trace.live_feed import LiveFeed
from metis_core.trace.store import TraceStore

DEFAULT_CLIENT_QUEUE = 1_000
REPLAY_LIMIT = 50_000


class ClientStream:
    """Events for one client, in order. Create, `await start(last_event_id)`, then `await next_batch()`
    until it returns None (overflowed) and finally `await close(reason)`."""

    def __init__(self, bus: EventBus, trace: TraceStore, stream_filter: StreamFilter, *,
                 capacity: int = DEFAULT_CLIENT_QUEUE, name: str | None = None,
                 feed: LiveFeed | None = None) -> None:
        self.bus, self.trace, self.filter, self.capacity = bus, trace, stream_filter, capacity
        self.feed = feed
        self._feed_handle: int | None = None
        self.name = name or f"ws-client:{new_ulid()}"
        self._queue: deque[Event] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._waiting = False
        self.overflowed = False
        self.overflow = asyncio.Event()
        self._handle: SubscriptionHandle | None = None
        self._replayed: set[str] = set()
        self._replay: list[Event] = []

    # --- the bus side (the subscription's worker thread) -----------------------------------

    def _deliver(self, event: Event) -> None:
        if not self.filter.admits(event):
            return
        with self._lock:
            if self.overflowed:
                return
            if len(self._queue) >= self.capacity:
                self.overflowed = True
                wake = True
            else:
                self._queue.append(event)
                wake, self._waiting = self._waiting, False
        if wake and self._loop is not None:
            self._loop.call_soon_threadsafe(self._signal)

    def _signal(self) -> None:
        self._wake.set()
        if self.overflowed:
            self.overflow.set()

    # --- the client side (the server's event loop) -----------------------------------------

    async def start(self, last_event_id: str | None) -> None:
        """Subscribe, and when `last_event_id` is given (\"\" = from the start) load the replay."""
        self._loop = asyncio.get_running_loop()
        if self.feed is not None:
            await self._start_on_feed(self.feed, last_event_id)
            return
        subscription = Subscription(self.filter.bus_filter, self._deliver, self.name, fast_path=False)
        self._handle = await asyncio.to_thread(self.bus.subscribe, subscription)
        if last_event_id is None:
            return
        await self.bus.aflush()
        self._replay = await asyncio.to_thread(self._stored_after, last_event_id)
        self._replayed = {event.id for event in self._replay}

    async def _start_on_feed(self, feed: LiveFeed, last_event_id: str | None) -> None:
        self._feed_handle, upto = feed.subscribe(self._deliver)
        if last_event_id is None:
            return
        f = self.filter.bus_filter
        sessions = sorted(f.session_ids) if f.session_ids is not None else None
        types = sorted(f.event_types) if f.event_types is not None else None
        stored = await asyncio.to_thread(feed.replay, last_event_id, upto, session_ids=sessions, types=types,
                                         limit=REPLAY_LIMIT)
        self._replay = [event for event in stored if self.filter.admits(event)]

    def _stored_after(self, last_event_id: str) -> list[Event]:
        f = self.filter.bus_filter
        sessions: list[str | None] = [*sorted(f.session_ids)] if f.session_ids is not None else [None]
        found: list[Event] = []
        for session_id in sessions:
            found += self.trace.events(session_id=session_id, types=f.event_types, after_id=last_event_id,
                                       limit=REPLAY_LIMIT)
        found.sort(key=lambda e: e.id)
        return [event for event in found if self.filter.admits(event)]

    def take_replay(self) -> list[Event]:
        """The stored events after the client's last id (once; empty after the first call)."""
        replay, self._replay = self._replay, []
        return replay

    async def next_batch(self) -> list[Event] | None:
        """Live events not yet sent, waiting for at least one; None once the client overflowed."""
        while True:
            with self._lock:
                if self.overflowed:
                    return None
                batch = list(self._queue)
                self._queue.clear()
                if not batch:
                    self._waiting = True
                    self._wake.clear()
            if not batch:
                await self._wake.wait()
                continue
            batch = self._not_replayed(batch)
            if batch:
                return batch

    def _not_replayed(self, batch: list[Event]) -> list[Event]:
        if not self._replayed:
            return batch
        if batch[0].id > max(self._replayed):  # ids only increase: the overlap with the replay is over
            self._replayed = set()
            return batch
        return [event for event in batch if event.id not in self._replayed]

    def take_queued(self) -> list[Event]:
        """What is queued now, without waiting (after `bus.aflush()`: everything emitted so far)."""
        with self._lock:
            batch = list(self._queue)
            self._queue.clear()
        return self._not_replayed(batch) if batch else batch

    async def close(self, reason: UnsubscribeReason) -> None:
        feed_handle, self._feed_handle = self._feed_handle, None
        if self.feed is not None and feed_handle is not None:
            self.feed.unsubscribe(feed_handle)
        handle, self._handle = self._handle, None
        if handle is not None and not self.bus.closed:
            await asyncio.to_thread(self.bus.unsubscribe, handle, reason)
