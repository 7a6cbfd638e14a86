"""The dispatcher's fast paths held to the general path: routes chosen per event type against every
filter's own `matches`, an async handler's continuation, and the worker's lock-free pending count."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator

import pytest
from event_payload_samples import MINIMAL_PAYLOADS

from metis_core.events.bus import BusMode, EventBus, EventFilter, Subscription
from metis_core.events.catalog import make_event
from metis_core.events.dispatch_worker import DispatchWorker
from metis_core.events.envelope import Actor, Event

TYPES = ("turn.started", "turn.completed", "llm.call_started")
SESSIONS = ("s1", "s2")
ACTORS = (Actor.USER, Actor.AGENT)


@pytest.fixture
def bus() -> Iterator[EventBus]:
    with EventBus(mode=BusMode.STRICT) as b:
        yield b


def _event(event_type: str, session_id: str, actor: Actor) -> Event:
    return make_event(event_type, MINIMAL_PAYLOADS[event_type], session_id=session_id, actor=actor)


class _Ids(list[str]):
    def append_id(self, event: Event) -> None:
        self.append(event.id)


def _filters() -> list[EventFilter]:
    """Every combination of: no constraint or one value or two, in each dimension."""
    type_sets = [None, ["turn.started"], ["turn.completed", "llm.call_started"]]
    session_sets = [None, ["s1"], ["s1", "s2"]]
    actor_sets = [None, [Actor.AGENT]]
    return [EventFilter(session_ids=s, event_types=t, actors=a)
            for t, s, a in itertools.product(type_sets, session_sets, actor_sets)]


def test_each_subscription_gets_exactly_what_its_filter_matches_in_order(bus: EventBus) -> None:
    filters = _filters()
    received = [_Ids() for _ in filters]
    for index, event_filter in enumerate(filters):
        bus.subscribe(Subscription(filter=event_filter, handler=received[index].append_id, name=f"f{index}",
                                   fast_path=index % 2 == 0))  # the dispatcher's own routes, and batch workers
    events = [_event(t, s, a) for t, s, a in itertools.product(TYPES, SESSIONS, ACTORS)] * 2
    for event in events:
        bus.emit(event)
    bus.flush()
    emitted = {e.id for e in events}  # (catch-all filters also get the bus's own lifecycle events)
    for index, event_filter in enumerate(filters):  # the general path: the filter asked for every event
        got = [i for i in received[index] if i in emitted]
        assert got == [e.id for e in events if event_filter.matches(e)], event_filter.describe()


def test_the_route_table_follows_subscribe_and_unsubscribe(bus: EventBus) -> None:
    first: list[str] = []
    second: list[str] = []
    only_started = EventFilter(event_types=["turn.started"])
    bus.subscribe(Subscription(filter=only_started, handler=lambda e: first.append(e.type), name="first",
                               fast_path=True))
    bus.emit(_event("turn.started", "s1", Actor.USER))
    bus.emit(_event("turn.completed", "s1", Actor.AGENT))
    bus.flush()
    handle = bus.subscribe(Subscription(filter=EventFilter(), handler=lambda e: second.append(e.type), name="all",
                                        fast_path=True))
    bus.emit(_event("turn.started", "s1", Actor.USER))
    bus.emit(_event("turn.completed", "s1", Actor.AGENT))
    bus.flush()
    bus.unsubscribe(handle)
    bus.emit(_event("turn.completed", "s1", Actor.AGENT))
    bus.emit(_event("turn.started", "s1", Actor.USER))
    bus.flush()
    assert first == ["turn.started", "turn.started", "turn.started"]
    # what came while it was subscribed, nothing after (its own lifecycle events left aside)
    assert [t for t in second if t in TYPES] == ["turn.started", "turn.completed"]


def test_an_async_handler_holds_the_routes_after_it_and_the_next_event(bus: EventBus) -> None:
    order: list[tuple[str, str]] = []

    async def slow_async(event: Event) -> None:
        await asyncio.sleep(0.001)
        order.append(("async", event.id))

    async def failing_async(event: Event) -> None:
        await asyncio.sleep(0)
        raise RuntimeError("boom")

    def failing_sync(event: Event) -> None:
        raise RuntimeError("boom")

    bus.subscribe(Subscription(filter=EventFilter(), handler=lambda e: order.append(("before", e.id)), name="a",
                               fast_path=True))
    bus.subscribe(Subscription(filter=EventFilter(), handler=slow_async, name="b", fast_path=True))
    bus.subscribe(Subscription(filter=EventFilter(), handler=failing_async, name="c", fast_path=True))
    bus.subscribe(Subscription(filter=EventFilter(), handler=failing_sync, name="d", fast_path=True))
    bus.subscribe(Subscription(filter=EventFilter(event_types=["turn.completed"]),
                               handler=lambda e: order.append(("after", e.id)), name="e", fast_path=True))  # fmt: skip
    events = [_event("turn.completed", "s1", Actor.AGENT), _event("turn.started", "s1", Actor.USER),
              _event("turn.completed", "s2", Actor.AGENT)]  # fmt: skip
    for event in events:
        bus.emit(event)
    bus.flush()
    expected: list[tuple[str, str]] = []
    for event in events:
        expected += [("before", event.id), ("async", event.id)]
        if event.type == "turn.completed":
            expected.append(("after", event.id))
    emitted = {e.id for e in events}  # (the bus's own lifecycle events left aside)
    assert [step for step in order if step[1] in emitted] == expected


def test_pending_counts_every_accepted_event_until_it_ran_from_many_threads() -> None:
    seen: list[str] = []
    release = threading.Event()

    def process(event: Event) -> None:
        release.wait(10)
        seen.append(event.id)

    worker = DispatchWorker("test-worker", process, capacity=10_000)
    try:
        per_thread = {n: [_event("turn.started", f"s{n}", Actor.USER) for _ in range(200)] for n in range(4)}
        threads = [threading.Thread(target=lambda n=n: [worker.put(e) for e in per_thread[n]]) for n in per_thread]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert worker.pending == 800  # none has finished: the first is held in process()
        release.set()
        for _ in range(500):
            if worker.pending == 0:
                break
            threading.Event().wait(0.01)
        assert worker.pending == 0
        assert sorted(seen) == sorted(e.id for events in per_thread.values() for e in events)
        for events in per_thread.values():  # each producer's order kept
            ids = [e.id for e in events]
            assert [i for i in seen if i in set(ids)] == ids
    finally:
        worker.stop(drain=True)
        worker.join(5)


def test_a_full_worker_refuses_and_a_stop_without_drain_discards_the_rest() -> None:
    release = threading.Event()
    started = threading.Event()

    def process(event: Event) -> None:
        started.set()
        release.wait(10)

    worker = DispatchWorker("test-worker", process, capacity=3)
    events = [_event("turn.started", "s1", Actor.USER) for _ in range(5)]
    assert worker.put(events[0]) is None
    assert started.wait(5)  # the first is running (still pending)
    assert worker.put(events[1]) is None and worker.put(events[2]) is None
    assert worker.put(events[3]) == 3  # full: refused, with the depth
    assert worker.pending == 3
    assert worker.stop(drain=False) == 2  # the two queued; the running one finishes
    release.set()
    assert worker.join(5)
    assert worker.pending == 0
