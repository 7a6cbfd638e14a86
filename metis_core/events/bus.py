"""The in-process event bus (spec §3, §5): validate on emit, enqueue, fan out to subscribers.

`emit` validates against the catalog and appends to a bounded queue; a dispatch worker (its own
daemon thread and asyncio loop) runs fast-path handlers inline, in subscription order, and hands
events to each batch subscriber's own worker. The bus never persists events and never turns its
own diagnostics (overflow, handler errors) into events: those are structured log lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel

from metis_core.errors import (
    ConfigError,
    EventBusClosedError,
    EventBusOverflowError,
    EventBusTimeoutError,
    EventValidationError,
    FastPathHandlerError,
)
from metis_core.events.catalog import make_event, validate_event
from metis_core.events.dispatch_worker import DispatchWorker, FlushBarrier, ProcessEvent
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor, Event, Sensitivity
from metis_core.events.exit_drain import track
from metis_core.events.filters import EventFilter
from metis_core.events.overflow_log import OverflowLog
from metis_core.events.subscription import EventHandler, Subscription, SubscriptionHandle, is_slow
from metis_core.events.trusted_event import check_trusted, make_trusted_event
from metis_core.ids import new_ulid

logger = logging.getLogger(__name__)

__all__ = ["BusMode", "EventBus", "EventFilter", "Subscription", "SubscriptionHandle", "bus_mode_from_env"]

DEFAULT_QUEUE_CAPACITY = 10_000
BUS_MODE_ENV = "METIS_BUS_MODE"
UnsubscribeReason = Literal["explicit", "client_disconnect", "shutdown", "removed_after_errors"]


class BusMode(StrEnum):
    STRICT = "strict"  # invalid events raise EventValidationError at the emitter (tests, development)
    LENIENT = "lenient"  # invalid events are logged at WARNING and dropped (production default)


def bus_mode_from_env() -> BusMode:
    """METIS_BUS_MODE, or lenient when unset; tests/conftest.py sets strict."""
    raw = os.environ.get(BUS_MODE_ENV, "").strip().lower()
    if not raw:
        return BusMode.LENIENT
    try:
        return BusMode(raw)
    except ValueError:
        raise ConfigError(f"{BUS_MODE_ENV}={raw!r} is not a bus mode; use 'strict' or 'lenient'") from None


@dataclass(frozen=True)
class _Route:
    """A live subscription as the dispatch worker sees it."""

    handle: SubscriptionHandle
    filter: EventFilter
    handler: EventHandler
    batch_worker: DispatchWorker | None  # None = fast path

    @property
    def name(self) -> str:
        return self.handle.subscription.name


async def _call_isolated(name: str, handler: EventHandler, event: Event) -> None:
    """Run one handler; an exception is logged at WARNING and goes no further (spec §5.2)."""
    try:
        result = handler(event)
        if result is not None and inspect.isawaitable(result):
            await result
    except (Exception, asyncio.CancelledError) as error:
        _handler_failed(name, event, error)


def _handler_failed(name: str, event: Event, error: BaseException) -> None:
    logger.warning(
        "bus handler failed: subscription=%s event_id=%s event_type=%s error=%r",
        name, event.id, event.type, error,
        exc_info=error,
        extra={"subscription": name, "event_id": event.id, "event_type": event.type, "error": repr(error)},
    )  # fmt: skip


class _BatchForwardingBarrier(FlushBarrier):
    """Reached on the dispatcher thread: by then every earlier event has been handed to the batch
    workers, so queueing the caller's barrier on each of them covers their backlogs too."""

    def __init__(self, barrier: FlushBarrier, batch_workers: Callable[[], list[DispatchWorker]]) -> None:
        super().__init__()
        self._barrier = barrier
        self._batch_workers = batch_workers

    def arrive(self) -> None:
        workers = self._batch_workers()
        self._barrier.expect(len(workers))
        for worker in workers:
            worker.put_barrier(self._barrier)
        self._barrier.arrive()


class EventBus:
    """In-process pub/sub for catalog events. Thread-safe; usable from sync and async code.

    `queue_capacity` bounds events emitted but not yet dispatched (fast path) and, separately,
    each batch subscriber's backlog. `mode` defaults to METIS_BUS_MODE (lenient when unset).
    """

    def __init__(self, *, mode: BusMode | str | None = None, queue_capacity: int = DEFAULT_QUEUE_CAPACITY):
        if queue_capacity < 1:
            raise ValueError("queue_capacity must be at least 1")
        self.mode = BusMode(mode) if mode is not None else bus_mode_from_env()
        self.queue_capacity = queue_capacity
        self._strict = self.mode is BusMode.STRICT
        self._closed = False
        self.enqueued = 0
        """Events accepted so far (`settle` compares it across a flush)."""
        self._routes: tuple[_Route, ...] = ()
        self._route_cache: tuple[tuple[_Route, ...], dict[str, tuple[tuple[_Route, bool], ...]]] = ((), {})
        self._routes_lock = threading.Lock()
        self._dispatcher = DispatchWorker("metis-event-bus", self._dispatch, queue_capacity)
        self._holding = threading.local()
        self._overflow = OverflowLog(logger)
        self._backlog_overflow = OverflowLog(logger)
        track(self)  # drained at interpreter exit if never shut down

    # --- emitting -------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Validate against the catalog and enqueue; returns before any handler runs.

        Strict mode raises EventValidationError for an invalid event; lenient mode logs it at
        WARNING and drops it. Raises EventBusOverflowError when the queue is full and
        EventBusClosedError after shutdown.
        """
        if self._closed:
            raise EventBusClosedError(f"cannot emit {event.type}: the event bus has been shut down")
        try:
            validate_event(event)
        except EventValidationError as error:
            if self._strict:
                raise
            self._log_dropped(event.type, error)
            return
        self._enqueue(event)

    def emit_new(
        self,
        event_type: str,
        payload: Mapping[str, Any] | BaseModel,
        *,
        session_id: str,
        turn_id: str | None = None,
        parent: Event | str | None = None,
        actor: Actor | None = None,
        sensitivity: Sensitivity | None = None,
    ) -> Event | None:
        """`make_event` then enqueue; returns the event, or None if lenient mode dropped it."""
        if self._closed:
            raise EventBusClosedError(f"cannot emit {event_type}: the event bus has been shut down")
        try:
            event = make_event(
                event_type, payload, session_id=session_id, turn_id=turn_id, parent=parent,
                actor=actor, sensitivity=sensitivity,
            )  # fmt: skip
        except EventValidationError as error:
            if self._strict:
                raise
            self._log_dropped(event_type, error)
            return None
        self._enqueue(event)
        return event

    def emit_trusted(
        self,
        event_type: str,
        payload: Mapping[str, Any],
        *,
        session_id: str,
        turn_id: str | None = None,
        parent: Event | str | None = None,
        actor: Actor | None = None,
    ) -> Event:
        """`emit_new` for a payload its emitter built from its own typed values: built by
        `make_trusted_event`, without validating its values (~10 µs an event saved). In strict mode
        the event is also built the validated way and any difference raises EventValidationError,
        so the tests of every trusted emitter check it (docs/event-bus.md "Trusted construction")."""
        if self._closed:
            raise EventBusClosedError(f"cannot emit {event_type}: the event bus has been shut down")
        event = make_trusted_event(event_type, payload, session_id=session_id, turn_id=turn_id, parent=parent,
                                   actor=actor)
        return self.enqueue_trusted(event, payload)

    def enqueue_trusted(self, event: Event, payload: Mapping[str, Any]) -> Event:
        """`emit_trusted`'s second half, for a caller that built `event` with `make_trusted_event` from
        `payload` itself (`TurnRecorder.emit_trusted`)."""
        if self._closed:
            raise EventBusClosedError(f"cannot emit {event.type}: the event bus has been shut down")
        if self._strict:
            check_trusted(event, payload)
        self._enqueue(event)
        return event

    @contextlib.contextmanager
    def dispatch_held(self) -> Iterator[None]:
        """Events this thread emits inside the block are queued at once (order, capacity and overflow
        as ever), but the dispatcher is woken once, at the end: a burst is handled together, and a
        trace store commits it as one transaction instead of one per event."""
        self.hold_dispatch()
        try:
            yield
        finally:
            self.release_dispatch()

    def hold_dispatch(self) -> None:
        """`dispatch_held`'s start, for a caller that runs it once per batch without a generator (the
        gateway's record writer); pair it with `release_dispatch` in a `finally`."""
        self._holding.active = True

    def release_dispatch(self) -> None:
        """`dispatch_held`'s end: stop holding this thread's events and wake the dispatcher."""
        self._holding.active = False
        self._dispatcher.wake()

    def _enqueue(self, event: Event) -> None:
        depth = self._dispatcher.put(event, wake=not getattr(self._holding, "active", False))
        if depth is None:
            self.enqueued += 1
            if self._overflow.active:
                self._overflow.recovered("event bus overflow ended")
            return
        self._overflow.rejected(
            "event bus overflow: rejected event_type=%s queue_depth=%d queue_capacity=%d",
            event.type, depth, self.queue_capacity,
            extra={"event_type": event.type, "queue_depth": depth, "queue_capacity": self.queue_capacity},
        )  # fmt: skip
        raise EventBusOverflowError(
            f"event bus queue is full ({depth} events waiting); {event.type} was not enqueued. "
            "A subscriber is stalling the fast path or something is emitting in a loop."
        )

    def _log_dropped(self, event_type: str, error: EventValidationError) -> None:
        logger.warning(
            "bus dropped invalid event (lenient mode): event_type=%s error=%s", event_type, error,
            extra={"event_type": event_type, "error": str(error)},
        )  # fmt: skip

    # --- dispatch (runs on the dispatcher thread) ------------------------------------------

    def _dispatch(self, event: Event) -> Awaitable[None] | None:
        """Hand `event` to every matching route, in subscription order. Runs synchronously; when a
        fast-path handler returns an awaitable, returns a coroutine that awaits it and goes on with the
        remaining routes (the dispatcher awaits it before the next event, so order holds)."""
        cache = self._route_cache  # `_routes_by_type`'s table read here first: no call per event when it hits
        routes = cache[1].get(event.type) if cache[0] is self._routes else None
        if routes is None:
            routes = self._routes_by_type(event.type)
        for index, (route, check) in enumerate(routes):
            if check and not route.filter.matches(event):
                continue
            if route.batch_worker is None:  # _call_isolated inlined: this runs for every event and handler
                try:
                    result = route.handler(event)
                    if result is not None and inspect.isawaitable(result):
                        return self._dispatch_rest(event, route, result, routes[index + 1:])
                except (Exception, asyncio.CancelledError) as error:
                    _handler_failed(route.name, event, error)
            else:
                self._to_batch_worker(route, event)
        return None

    async def _dispatch_rest(
        self, event: Event, route: _Route, result: Awaitable[object], rest: tuple[tuple[_Route, bool], ...]
    ) -> None:
        """`_dispatch` from an async handler's awaitable on: await it, then the routes after it."""
        try:
            await result
        except (Exception, asyncio.CancelledError) as error:
            _handler_failed(route.name, event, error)
        for route, check in rest:
            if check and not route.filter.matches(event):
                continue
            if route.batch_worker is None:
                await _call_isolated(route.name, route.handler, event)
            else:
                self._to_batch_worker(route, event)

    def _to_batch_worker(self, route: _Route, event: Event) -> None:
        assert route.batch_worker is not None
        if (depth := route.batch_worker.put(event)) is not None:
            self._backlog_overflow.rejected(
                "batch subscriber backlog full: subscription=%s dropped event_id=%s event_type=%s "
                "queue_depth=%d", route.name, event.id, event.type, depth,
                extra={"subscription": route.name, "event_id": event.id, "event_type": event.type,
                       "queue_depth": depth},
            )  # fmt: skip
        elif self._backlog_overflow.active:
            self._backlog_overflow.recovered("batch subscriber backlog accepts events again")

    def _routes_by_type(self, event_type: str) -> tuple[tuple[_Route, bool], ...]:
        """The routes that may want an event of `event_type`, in subscription order, each with whether
        its filter must still be asked (it names sessions or actors); a route whose types exclude this
        one is left out. Remembered per type for the current routes (a new tuple on each change)."""
        routes = self._routes
        cache = self._route_cache
        if cache[0] is not routes:  # subscribed or unsubscribed since: start over for these routes
            cache = self._route_cache = (routes, {})
        found = cache[1].get(event_type)
        if found is None:
            found = cache[1][event_type] = tuple(
                (route, route.filter.session_ids is not None or route.filter.actors is not None)
                for route in routes
                if route.filter.event_types is None or event_type in route.filter.event_types
            )
        return found

    # --- subscriptions --------------------------------------------------------------------

    def subscribe(self, subscription: Subscription) -> SubscriptionHandle:
        """Attach a subscription and emit bus.subscriber_registered. A handler marked `@slow`
        on the fast path raises FastPathHandlerError."""
        if self._closed:
            raise EventBusClosedError(f"cannot subscribe {subscription.name!r}: the event bus has been shut down")
        if subscription.fast_path and is_slow(subscription.handler):
            raise FastPathHandlerError(
                f"subscription {subscription.name!r} puts a @slow handler on the fast path, where every "
                "handler must finish in <1ms; subscribe it with fast_path=False"
            )
        handle = SubscriptionHandle(id=new_ulid(), subscription=subscription)
        batch_worker = None
        if not subscription.fast_path:
            name = f"metis-bus-batch:{subscription.name}"
            batch_worker = DispatchWorker(name, self._batch_process(subscription), self.queue_capacity)
        route = _Route(handle, subscription.filter, subscription.handler, batch_worker)
        with self._routes_lock:
            self._routes = (*self._routes, route)
        self._emit_lifecycle(
            "bus.subscriber_registered",
            {
                "subscription_name": subscription.name,
                "filter": subscription.filter.describe(),
                "fast_path": subscription.fast_path,
            },
        )
        return handle

    @staticmethod
    def _batch_process(subscription: Subscription) -> ProcessEvent:
        async def process(event: Event) -> None:
            await _call_isolated(subscription.name, subscription.handler, event)

        return process

    def unsubscribe(self, handle: SubscriptionHandle, reason: UnsubscribeReason = "explicit") -> None:
        """Detach a subscription and emit bus.subscriber_unregistered. Idempotent: unknown or
        already removed handles are ignored. A batch subscriber finishes its backlog first."""
        with self._routes_lock:
            route = next((r for r in self._routes if r.handle.id == handle.id), None)
            if route is None:
                return
            self._routes = tuple(r for r in self._routes if r is not route)
        if route.batch_worker is not None:
            route.batch_worker.stop(drain=True)
        if not self._closed:
            self._emit_lifecycle("bus.subscriber_unregistered", {"subscription_name": route.name, "reason": reason})

    @property
    def subscriptions(self) -> tuple[SubscriptionHandle, ...]:
        return tuple(route.handle for route in self._routes)

    def _emit_lifecycle(self, event_type: str, payload: dict[str, Any]) -> None:
        """Lifecycle events are best effort: an overflow is already logged and must not undo
        the (un)subscription that happened."""
        event = make_event(event_type, payload, session_id=SYSTEM_SESSION_ID, actor=Actor.SYSTEM)
        with contextlib.suppress(EventBusOverflowError):
            self._enqueue(event)

    # --- draining and shutdown ------------------------------------------------------------

    def flush(self, timeout: float | None = 10.0) -> None:
        """Block until every event emitted before this call has been through every matching
        handler, fast path and batch. Raises EventBusTimeoutError after `timeout` seconds."""
        self._refuse_from_worker_thread("flush")
        barrier = FlushBarrier()
        self._dispatcher.put_barrier(_BatchForwardingBarrier(barrier, self._batch_workers))
        if not barrier.wait(timeout):
            raise EventBusTimeoutError(
                f"event bus did not drain within {timeout}s ({self._dispatcher.pending} events still "
                "queued); a handler is blocking"
            )

    def settle(self, timeout: float | None = 10.0, max_rounds: int = 16) -> None:
        """Flush until a flush ends with no new event accepted during it: handlers that emit what
        other handlers read (feedback → verdict → outcome) have all run, however their threads
        interleaved. At most `max_rounds` flushes (a handler emitting forever is not waited for)."""
        for _ in range(max_rounds):
            before = self.enqueued
            self.flush(timeout)
            if self.enqueued == before:
                return

    async def aflush(self, timeout: float | None = 10.0) -> None:
        """`flush` for async callers: waits without blocking the running event loop."""
        self._refuse_from_worker_thread("aflush")
        await asyncio.to_thread(self.flush, timeout)

    def shutdown(self, *, drain: bool = True, timeout: float | None = 10.0) -> None:
        """Stop accepting events. With drain, emit bus.subscriber_unregistered (reason shutdown)
        for each subscription, dispatch everything queued, then stop every worker; without,
        queued events are discarded (logged). Idempotent."""
        with self._routes_lock:
            if self._closed:
                return
            self._closed = True
            routes = self._routes
        if drain:
            for route in routes:
                self._emit_lifecycle(
                    "bus.subscriber_unregistered", {"subscription_name": route.name, "reason": "shutdown"}
                )
            try:
                self.flush(timeout)
            finally:
                self._stop_workers(routes, drain=True, timeout=timeout)
            return
        self._stop_workers(routes, drain=False, timeout=timeout)

    def _stop_workers(self, routes: tuple[_Route, ...], *, drain: bool, timeout: float | None) -> None:
        with self._routes_lock:
            self._routes = ()
        workers = [self._dispatcher, *(r.batch_worker for r in routes if r.batch_worker is not None)]
        discarded = sum(worker.stop(drain=drain) for worker in workers)
        if discarded:
            logger.warning(
                "event bus shut down without draining: discarded_events=%d", discarded,
                extra={"discarded_events": discarded},
            )  # fmt: skip
        for worker in workers:
            worker.join(timeout)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def queue_depth(self) -> int:
        """Events emitted and not yet through the fast path."""
        return self._dispatcher.pending

    def _batch_workers(self) -> list[DispatchWorker]:
        return [route.batch_worker for route in self._routes if route.batch_worker is not None]

    def _refuse_from_worker_thread(self, what: str) -> None:
        me = threading.get_ident()
        if any(worker.thread_ident == me for worker in (self._dispatcher, *self._batch_workers())):
            raise RuntimeError(f"{what}() called from a bus handler would wait for itself; call it elsewhere")

    def __enter__(self) -> EventBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
