"""EventBus dispatch: filters, order, fast path vs batch, handler isolation, the @slow guard,
subscription lifecycle events, flushing, and graceful shutdown."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from event_payload_samples import MINIMAL_PAYLOADS

from metis_core.errors import EventBusTimeoutError, EventValidationError, FastPathHandlerError
from metis_core.events.bus import BusMode, EventBus, EventFilter, Subscription
from metis_core.events.catalog import make_event
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor, Event
from metis_core.events.recorder import EventRecorder
from metis_core.events.subscription import slow

TURNS = EventFilter(event_types={"turn.started"})


@pytest.fixture
def bus() -> Iterator[EventBus]:
    bus = EventBus(mode=BusMode.STRICT)
    yield bus
    bus.shutdown(drain=False, timeout=2)


def _turn(session_id: str = "s1", actor: Actor | None = None) -> Event:
    return make_event("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id=session_id, actor=actor)


def _wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return False


def test_filters_route_by_session_type_and_actor(bus: EventBus) -> None:
    by_session, by_actor = EventRecorder(), EventRecorder()
    bus.subscribe(by_session.subscription(EventFilter(session_ids={"s2"}, event_types={"turn.started"})))
    bus.subscribe(by_actor.subscription(EventFilter(event_types={"turn.started"}, actors={"system"})))
    for event in (_turn("s1"), _turn("s2"), _turn("s1", actor=Actor.SYSTEM)):
        bus.emit(event)
    bus.flush()
    assert [e.session_id for e in by_session.events] == ["s2"]
    assert [e.actor for e in by_actor.events] == [Actor.SYSTEM]


def test_a_filter_naming_an_unknown_type_is_rejected() -> None:
    with pytest.raises(EventValidationError, match=r"turn\.begun"):
        EventFilter(event_types={"turn.begun"})


def test_fast_path_handlers_run_in_subscription_order_per_event(bus: EventBus) -> None:
    calls: list[str] = []

    async def second(event: Event) -> None:
        calls.append("b")

    bus.subscribe(Subscription(TURNS, lambda e: calls.append("a"), "a", fast_path=True))
    bus.subscribe(Subscription(TURNS, second, "b", fast_path=True))
    bus.emit(_turn())
    bus.emit(_turn())
    bus.flush()
    assert calls == ["a", "b", "a", "b"]


def test_async_handlers_run_on_the_bus_loop_not_the_callers(bus: EventBus) -> None:
    seen: list[str] = []

    async def handler(event: Event) -> None:
        await asyncio.sleep(0)
        seen.append(threading.current_thread().name)

    bus.subscribe(Subscription(TURNS, handler, "async", fast_path=True))
    bus.emit(_turn())
    bus.flush()
    assert seen == ["metis-event-bus"]


def test_a_raising_handler_is_logged_and_isolated(bus: EventBus, caplog: pytest.LogCaptureFixture) -> None:
    received = EventRecorder()
    failures: list[str] = []

    def explode(event: Event) -> None:
        failures.append(event.id)
        raise ValueError("handler bug")

    async def explode_async(event: Event) -> None:
        raise RuntimeError("async handler bug")

    bus.subscribe(Subscription(TURNS, explode, "exploder", fast_path=True))
    bus.subscribe(Subscription(TURNS, explode_async, "async-exploder", fast_path=True))
    bus.subscribe(Subscription(TURNS, explode, "batch-exploder"))
    bus.subscribe(received.subscription(TURNS))
    first, second = _turn(), _turn()
    with caplog.at_level(logging.WARNING, logger="metis_core.events.bus"):
        bus.emit(first)
        bus.emit(second)
        bus.flush()
    assert received.events == [first, second]
    assert sorted(failures) == sorted([first.id, second.id, first.id, second.id])
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 6
    sync_failure = next(r for r in warnings if r.subscription == "exploder")  # type: ignore[attr-defined]
    assert sync_failure.event_id == first.id  # type: ignore[attr-defined]
    assert sync_failure.event_type == "turn.started"  # type: ignore[attr-defined]
    assert "handler bug" in sync_failure.error  # type: ignore[attr-defined]
    assert "exploder" in sync_failure.getMessage() and first.id in sync_failure.getMessage()


def test_a_slow_handler_on_the_fast_path_is_refused(bus: EventBus) -> None:
    @slow
    def snapshot(event: Event) -> None:
        return None

    with pytest.raises(FastPathHandlerError, match="snapshotter"):
        bus.subscribe(Subscription(EventFilter(), snapshot, "snapshotter", fast_path=True))
    assert bus.subscriptions == ()
    bus.subscribe(Subscription(EventFilter(), snapshot, "snapshotter", fast_path=False))


def test_a_slow_method_on_the_fast_path_is_refused(bus: EventBus) -> None:
    class Snapshotter:
        @slow
        async def handle(self, event: Event) -> None:
            return None

    with pytest.raises(FastPathHandlerError):
        bus.subscribe(Subscription(EventFilter(), Snapshotter().handle, "method", fast_path=True))


def test_a_batch_subscriber_never_stalls_the_fast_path(bus: EventBus) -> None:
    release = threading.Event()
    batch_seen: list[str] = []

    def stuck(event: Event) -> None:
        release.wait(10)
        batch_seen.append(event.id)

    fast = EventRecorder()
    bus.subscribe(Subscription(TURNS, stuck, "stuck-batch"))
    bus.subscribe(fast.subscription(TURNS))
    events = [_turn() for _ in range(20)]
    for event in events:
        bus.emit(event)
    assert _wait_for(lambda: len(fast) == 20), "fast path waited for a batch subscriber"
    assert len(batch_seen) == 0
    release.set()
    bus.flush()
    assert batch_seen == [e.id for e in events]


def test_subscribe_and_unsubscribe_emit_lifecycle_events_and_unsubscribe_is_idempotent(bus: EventBus) -> None:
    observer = EventRecorder()
    bus.subscribe(observer.subscription(EventFilter(event_types={"bus.subscriber_unregistered"}), name="observer"))
    bus.flush()  # a subscription sees what is dispatched after it joins, even if emitted just before
    lifecycle = EventRecorder()
    handle = bus.subscribe(lifecycle.subscription(EventFilter(session_ids={SYSTEM_SESSION_ID}), name="lifecycle"))
    bus.flush()
    registered = lifecycle.of_type("bus.subscriber_registered")
    assert [e.payload for e in registered] == [
        {
            "subscription_name": "lifecycle",
            "filter": {"session_ids": [SYSTEM_SESSION_ID], "event_types": None, "actors": None},
            "fast_path": True,
        }
    ]
    assert registered[0].session_id == SYSTEM_SESSION_ID and registered[0].actor is Actor.SYSTEM
    bus.unsubscribe(handle)
    bus.unsubscribe(handle)
    bus.flush()
    assert [e.payload for e in observer.events] == [{"subscription_name": "lifecycle", "reason": "explicit"}]
    assert handle not in bus.subscriptions
    assert lifecycle.of_type("bus.subscriber_unregistered") == []


def test_an_unsubscribed_batch_subscriber_receives_nothing_new(bus: EventBus) -> None:
    recorder = EventRecorder()
    handle = bus.subscribe(recorder.subscription(TURNS, fast_path=False))
    bus.emit(_turn())
    bus.flush()
    bus.unsubscribe(handle, reason="client_disconnect")
    bus.emit(_turn())
    bus.flush()
    assert len(recorder) == 1


def test_emit_from_many_threads_delivers_everything_in_per_thread_order(bus: EventBus) -> None:
    recorder = EventRecorder()
    bus.subscribe(recorder.subscription(TURNS))

    def emit_many(session_id: str) -> None:
        for _ in range(200):
            bus.emit(_turn(session_id))

    threads = [threading.Thread(target=emit_many, args=(f"s{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    bus.flush()
    assert len(recorder) == 800
    for i in range(4):
        ids = [e.id for e in recorder.events if e.session_id == f"s{i}"]
        assert len(ids) == 200 and ids == sorted(ids)


async def test_emit_from_async_code_and_aflush(bus: EventBus) -> None:
    recorder = EventRecorder()
    bus.subscribe(recorder.subscription(TURNS, fast_path=False))

    async def emit_some(session_id: str) -> None:
        for _ in range(10):
            bus.emit(_turn(session_id))
            await asyncio.sleep(0)

    await asyncio.gather(emit_some("a"), emit_some("b"))
    await bus.aflush()
    assert len(recorder) == 20


def test_flush_times_out_when_a_handler_blocks(bus: EventBus) -> None:
    release = threading.Event()
    bus.subscribe(Subscription(TURNS, lambda e: release.wait(5), "blocker", fast_path=True))
    bus.emit(_turn())
    with pytest.raises(EventBusTimeoutError, match="blocking"):
        bus.flush(timeout=0.05)
    release.set()
    bus.flush()


def test_flush_from_inside_a_handler_is_refused_instead_of_deadlocking(bus: EventBus) -> None:
    errors: list[BaseException] = []

    def flushes(event: Event) -> None:
        try:
            bus.flush(timeout=1)
        except RuntimeError as error:
            errors.append(error)

    bus.subscribe(Subscription(TURNS, flushes, "flusher", fast_path=True))
    bus.emit(_turn())
    bus.flush()
    assert len(errors) == 1


def test_a_handler_may_emit_follow_up_events(bus: EventBus) -> None:
    recorder = EventRecorder()
    bus.subscribe(recorder.subscription(EventFilter(event_types={"turn.started", "turn.completed"})))

    def complete(event: Event) -> None:
        bus.emit_new("turn.completed", MINIMAL_PAYLOADS["turn.completed"], session_id="s1", parent=event)

    bus.subscribe(Subscription(TURNS, complete, "completer", fast_path=True))
    started = _turn()
    bus.emit(started)
    bus.flush()
    bus.flush()
    assert recorder.types() == ["turn.started", "turn.completed"]
    assert recorder.events[1].parent_event_id == started.id


def test_graceful_shutdown_drains_everything_and_announces_unsubscription() -> None:
    bus = EventBus(mode=BusMode.STRICT)
    fast, batch = EventRecorder(), EventRecorder()

    def slightly_slow(event: Event) -> None:
        time.sleep(0.001)
        fast(event)

    bus.subscribe(Subscription(EventFilter(), slightly_slow, "fast", fast_path=True))
    bus.subscribe(batch.subscription(name="batch", fast_path=False))
    events = [_turn() for _ in range(50)]
    for event in events:
        bus.emit(event)
    bus.shutdown(drain=True)
    assert fast.of_type("turn.started") == events
    assert batch.of_type("turn.started") == events
    reasons = {
        (e.payload["subscription_name"], e.payload["reason"]) for e in fast.of_type("bus.subscriber_unregistered")
    }
    assert reasons == {("fast", "shutdown"), ("batch", "shutdown")}
    assert bus.closed and bus.subscriptions == ()
    bus.shutdown()  # idempotent


def test_shutdown_without_drain_discards_the_backlog(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus(mode=BusMode.STRICT)
    release = threading.Event()
    handled: list[str] = []

    def block(event: Event) -> None:
        release.wait(5)
        handled.append(event.id)

    bus.subscribe(Subscription(TURNS, block, "blocker", fast_path=True))
    for _ in range(10):
        bus.emit(_turn())
    threading.Timer(0.1, release.set).start()
    with caplog.at_level(logging.WARNING, logger="metis_core.events.bus"):
        bus.shutdown(drain=False, timeout=5)
    assert len(handled) < 10
    assert any(getattr(r, "discarded_events", 0) > 0 for r in caplog.records)


def test_events_emitted_under_dispatch_held_are_delivered_together_in_order_at_the_end(bus: EventBus) -> None:
    depths: list[int] = []
    seen = EventRecorder()

    def note(event: Event) -> None:
        depths.append(bus.queue_depth)

    bus.subscribe(Subscription(name="depth", filter=TURNS, handler=note, fast_path=True))  # as the trace store
    bus.subscribe(seen.subscription(TURNS))
    bus.flush()  # the dispatcher is idle, asleep on its queue
    emitted = []
    with bus.dispatch_held():
        for index in range(5):
            emitted.append(_turn(f"s{index}"))
            bus.emit(emitted[-1])
        time.sleep(0.05)
        assert seen.events == []  # queued, but the sleeping dispatcher was not woken
    bus.flush()
    assert [e.id for e in seen.events] == [e.id for e in emitted]
    assert depths[0] == 5  # the burst was in the queue at once: a store subscriber commits it together
    bus.emit(_turn("after"))  # outside the block, an emit wakes the dispatcher as ever
    assert _wait_for(lambda: len(seen.events) == 6)
