"""`EventBus.settle`: flushes until no handler emitted anything new, so a chain of batch handlers
(each emitting what the next reads) has run to its end, however long it is."""

from __future__ import annotations

from event_payload_samples import MINIMAL_PAYLOADS

from metis_core.events.bus import EventBus, EventFilter, Subscription
from metis_core.events.catalog import make_event
from metis_core.events.envelope import Event


def test_settle_waits_for_a_chain_longer_than_any_fixed_number_of_flushes() -> None:
    seen: list[str] = []
    with EventBus(mode="strict") as bus:
        def relay(event: Event) -> None:  # each link emits the next, six links deep
            seen.append(event.id)
            if len(seen) < 6:
                bus.emit(make_event("turn.completed", MINIMAL_PAYLOADS["turn.completed"], session_id="sess_chain"))

        bus.subscribe(Subscription(EventFilter(event_types={"turn.completed"}), relay, "relay"))
        bus.emit(make_event("turn.completed", MINIMAL_PAYLOADS["turn.completed"], session_id="sess_chain"))
        bus.settle(timeout=10)
        assert len(seen) == 6
        before = bus.enqueued
        bus.settle(timeout=10)  # nothing pending: one flush, nothing new
        assert bus.enqueued == before
