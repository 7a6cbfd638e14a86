"""EventBus.emit: catalog validation in strict and lenient mode, overflow, and emitting after
shutdown. Diagnostics are log lines, never bus events."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest
from event_payload_samples import MINIMAL_PAYLOADS, minimal

from metis_core.errors import ConfigError, EventBusClosedError, EventBusOverflowError, EventValidationError
from metis_core.events.bus import BusMode, EventBus, EventFilter, Subscription, bus_mode_from_env
from metis_core.events.catalog import make_event
from metis_core.events.envelope import Actor, Event
from metis_core.events.recorder import EventRecorder

BUS_LOGGER = "metis_core.events.bus"


@pytest.fixture
def bus() -> Iterator[EventBus]:
    bus = EventBus(mode=BusMode.STRICT)
    yield bus
    bus.shutdown(drain=False, timeout=2)


def _turn_started(session_id: str = "s1") -> Event:
    return make_event("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id=session_id)


def _recorded(bus: EventBus) -> EventRecorder:
    recorder = EventRecorder()
    bus.subscribe(recorder.subscription(EventFilter(event_types={"turn.started", "turn.completed"})))
    return recorder


def test_mode_defaults_to_lenient_when_the_environment_does_not_say(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METIS_BUS_MODE", raising=False)
    assert bus_mode_from_env() is BusMode.LENIENT
    monkeypatch.setenv("METIS_BUS_MODE", "Strict")
    assert bus_mode_from_env() is BusMode.STRICT


def test_an_unknown_mode_in_the_environment_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METIS_BUS_MODE", "loud")
    with pytest.raises(ConfigError, match="strict"):
        EventBus()


def test_the_test_suite_runs_the_bus_in_strict_mode() -> None:
    bus = EventBus()
    try:
        assert bus.mode is BusMode.STRICT
    finally:
        bus.shutdown()


def test_strict_mode_rejects_a_bad_payload_and_delivers_nothing(bus: EventBus) -> None:
    recorder = _recorded(bus)
    bad = Event(session_id="s", type="turn.started", actor=Actor.USER, payload={"user_message_hash": "x"})
    with pytest.raises(EventValidationError, match="estimated_input_tokens"):
        bus.emit(bad)
    bus.flush()
    assert recorder.of_type("turn.started") == []


def test_strict_mode_rejects_an_unknown_type(bus: EventBus) -> None:
    with pytest.raises(EventValidationError, match="not a catalog event type"):
        bus.emit(Event(session_id="s", type="turn.exploded", actor=Actor.USER, payload={}))


def test_strict_mode_rejects_a_reserved_streaming_type(bus: EventBus) -> None:
    with pytest.raises(EventValidationError):
        bus.emit(Event(session_id="s", type="text.delta", actor=Actor.AGENT, payload={"text": "hi"}))


def test_strict_mode_rejects_a_wrong_field_type(bus: EventBus) -> None:
    payload = minimal("turn.started", estimated_input_tokens="12")
    with pytest.raises(EventValidationError, match="estimated_input_tokens"):
        bus.emit(Event(session_id="s", type="turn.started", actor=Actor.USER, payload=payload))
    with pytest.raises(EventValidationError, match="estimated_input_tokens"):
        bus.emit_new("turn.started", payload, session_id="s")


def test_lenient_mode_logs_and_drops_an_invalid_event(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus(mode=BusMode.LENIENT)
    try:
        recorder = _recorded(bus)
        bad = Event(session_id="s", type="turn.started", actor=Actor.USER, payload={"nope": 1})
        with caplog.at_level(logging.WARNING, logger=BUS_LOGGER):
            bus.emit(bad)
            assert bus.emit_new("turn.completed", {"stop_reason": "end_turn"}, session_id="s") is None
        bus.emit(_turn_started())
        bus.flush()
        assert recorder.types() == ["turn.started"]
        dropped = [r for r in caplog.records if r.levelno == logging.WARNING and "dropped" in r.getMessage()]
        assert [getattr(r, "event_type", None) for r in dropped] == ["turn.started", "turn.completed"]
    finally:
        bus.shutdown()


def test_emit_new_builds_validates_enqueues_and_returns_the_event(bus: EventBus) -> None:
    recorder = _recorded(bus)
    event = bus.emit_new("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id="s", turn_id="t")
    bus.flush()
    assert event is not None and recorder.of_type("turn.started") == [event]


def test_emit_returns_before_handlers_run(bus: EventBus) -> None:
    release = threading.Event()
    bus.subscribe(Subscription(EventFilter(event_types={"turn.started"}), lambda e: release.wait(5), "slow", True))
    start = time.perf_counter()
    bus.emit(_turn_started())
    assert time.perf_counter() - start < 0.5
    release.set()
    bus.flush()


def test_overflow_raises_to_the_emitter_logs_an_error_and_emits_no_bus_event(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus(mode=BusMode.STRICT, queue_capacity=2)
    started, release = threading.Event(), threading.Event()

    def block(event: Event) -> None:
        started.set()
        release.wait(5)

    everything = EventRecorder()
    try:
        bus.subscribe(everything.subscription(name="everything"))
        bus.subscribe(Subscription(EventFilter(event_types={"turn.started"}), block, "blocker", fast_path=True))
        bus.flush()
        everything.clear()
        bus.emit(_turn_started())  # taken by the worker, which blocks inside the handler
        assert started.wait(5)
        bus.emit(_turn_started())  # waits in the queue: two events pending = capacity
        rejected = make_event("turn.completed", MINIMAL_PAYLOADS["turn.completed"], session_id="s1")
        with caplog.at_level(logging.ERROR, logger=BUS_LOGGER), pytest.raises(EventBusOverflowError):
            bus.emit(rejected)
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1
        assert errors[0].event_type == "turn.completed"  # type: ignore[attr-defined]
        assert errors[0].queue_depth == 2  # type: ignore[attr-defined]
        release.set()
        bus.flush()
        assert everything.types() == ["turn.started", "turn.started"]
        assert not any(t.startswith("bus.") for t in everything.types())
        bus.emit(rejected)  # room again once drained
        bus.flush()
        assert everything.types()[-1] == "turn.completed"
    finally:
        release.set()
        bus.shutdown(drain=False, timeout=2)


def test_emit_after_shutdown_raises(bus: EventBus) -> None:
    bus.shutdown()
    with pytest.raises(EventBusClosedError):
        bus.emit(_turn_started())
    with pytest.raises(EventBusClosedError):
        bus.emit_new("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id="s")
    with pytest.raises(EventBusClosedError):
        bus.subscribe(EventRecorder().subscription())


def test_queue_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="queue_capacity"):
        EventBus(queue_capacity=0)
