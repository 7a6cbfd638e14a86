"""`DispatchWorker`: one daemon thread running its own asyncio loop, draining a bounded queue of
events into a `process` callable, in order (awaiting what it returns, when it returns an awaitable).

The bus uses one for the fast path and one per batch subscriber. The worker knows nothing about
filters or subscribers; `FlushBarrier` items let a caller wait until everything before them ran.
The worker takes the lock only to go to sleep: producers append under it and it alone pops.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from metis_core.events.envelope import Event

logger = logging.getLogger(__name__)

ProcessEvent = Callable[[Event], Awaitable[Any] | None]
"""Handles one event; returns None when done, or an awaitable to await before the next event."""


class FlushBarrier:
    """Released once every worker it was handed to has reached it in its queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting_for = 1
        self._released = threading.Event()

    def expect(self, more: int) -> None:
        with self._lock:
            self._waiting_for += more

    def arrive(self) -> None:
        with self._lock:
            self._waiting_for -= 1
            done = self._waiting_for == 0
        if done:
            self._released.set()

    def wait(self, timeout: float | None) -> bool:
        return self._released.wait(timeout)


class _Stop:
    """Queue item that ends the worker loop once reached."""


class DispatchWorker:
    def __init__(self, name: str, process: ProcessEvent, capacity: int) -> None:
        self.name = name
        self.capacity = capacity
        self._process = process
        self._lock = threading.Lock()
        self._queue: deque[Event | FlushBarrier | _Stop] = deque()
        # Events accepted and not yet processed (the one running included) = _accepted - _done: producers
        # change _accepted under the lock, the worker thread alone counts _done (no lock per event).
        self._accepted = 0
        self._done = 0
        self._stopping = False
        self._sleeping = False
        self._wake: asyncio.Future[None] | None = None
        self._loop = asyncio.new_event_loop()
        self._worker = threading.Thread(target=self._run, name=name, daemon=True)
        self._worker.start()

    @property
    def pending(self) -> int:
        """Events accepted and not yet processed, the one running included."""
        done = self._done  # read first: a stale count only overstates what is pending
        return self._accepted - done

    @property
    def thread_ident(self) -> int | None:
        return self._worker.ident

    def put(self, event: Event, *, wake: bool = True) -> int | None:
        """Enqueue; None on success, else the queue depth that made it full (nothing enqueued).
        A stopping worker silently ignores new events. `wake=False` leaves a sleeping worker asleep
        until the next `wake()` or wakeful put (a burst is then handled together)."""
        with self._lock:
            if self._stopping:
                return None
            pending = self._accepted - self._done
            if pending >= self.capacity:
                return pending
            self._accepted += 1
            self._queue.append(event)
            woken = self._take_wake() if wake else None
        if woken is not None:
            self._loop.call_soon_threadsafe(_release, woken)
        return None

    def wake(self) -> None:
        """Wake the worker if it sleeps (after puts with `wake=False`)."""
        with self._lock:
            woken = self._take_wake()
        if woken is not None:
            self._loop.call_soon_threadsafe(_release, woken)

    def put_barrier(self, barrier: FlushBarrier) -> None:
        """The barrier is released for this worker once everything queued before it has run."""
        with self._lock:
            if self._stopping:
                barrier.arrive()
                return
            self._queue.append(barrier)
            wake = self._take_wake()
        if wake is not None:
            self._loop.call_soon_threadsafe(_release, wake)

    def stop(self, *, drain: bool) -> int:
        """Stop after the queued events (drain) or after the running one; returns events discarded."""
        with self._lock:
            if self._stopping:
                return 0
            self._stopping = True
            discarded = 0
            if drain:
                self._queue.append(_Stop())
            else:
                queue = self._queue
                while queue:  # popped one at a time: the worker may be popping too, outside the lock
                    try:
                        item = queue.popleft()
                    except IndexError:
                        break
                    if isinstance(item, FlushBarrier):
                        item.arrive()
                    elif isinstance(item, Event):
                        discarded += 1
                self._accepted -= discarded
                queue.append(_Stop())
            wake = self._take_wake()
        if wake is not None:
            self._loop.call_soon_threadsafe(_release, wake)
        return discarded

    def join(self, timeout: float | None) -> bool:
        if threading.get_ident() != self._worker.ident:
            self._worker.join(timeout)
        return not self._worker.is_alive()

    def _take_wake(self) -> asyncio.Future[None] | None:
        """Called with the lock held: the future to resolve if the worker is asleep."""
        if not self._sleeping:
            return None
        self._sleeping = False
        wake, self._wake = self._wake, None
        return wake

    def _run(self) -> None:
        try:
            self._loop.run_until_complete(self._drain_forever())
        finally:
            self._loop.close()

    async def _drain_forever(self) -> None:
        queue = self._queue
        process = self._process
        while True:
            # Only this thread pops (and `stop` without drain, under the lock): a non-empty queue has an
            # item for us. The lock is taken only to go to sleep, so no wake-up is lost.
            item: Event | FlushBarrier | _Stop | None
            try:
                item = queue.popleft()
            except IndexError:
                item = None
            if item is None:
                wake: asyncio.Future[None] | None = None
                with self._lock:
                    if not queue:
                        self._sleeping = True
                        self._wake = wake = self._loop.create_future()
                if wake is not None:
                    await wake
                continue
            if type(item) is Event or isinstance(item, Event):
                try:
                    pending = process(item)
                    if pending is not None:
                        await pending
                except Exception:  # process() isolates handlers; this guards the loop itself
                    logger.exception("dispatch worker %s failed on event %s", self.name, item.id)
                self._done += 1
            elif isinstance(item, FlushBarrier):
                item.arrive()
            else:
                return


def _release(wake: asyncio.Future[None]) -> None:
    if not wake.done():
        wake.set_result(None)
