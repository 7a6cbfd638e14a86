"""Event bus throughput and per-event costs: prints and returns a dict of figures.

Run as `.venv/bin/python bench/bench_bus.py`. Figures: events/s through the bus with one no-op
fast-path subscriber (median of several runs), emit() cost per event with and without catalog
validation, and make_event cost. The trace-store subscriber figure lives with the trace store.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from metis_core.events.bus import BusMode, EventBus, EventFilter, Subscription
from metis_core.events.catalog import make_event, validate_event
from metis_core.events.envelope import Event

EVENTS_PER_RUN = 50_000
RUNS = 5

LLM_CALL_COMPLETED: dict[str, Any] = {
    "model": "anthropic:claude-sonnet-4-5",
    "provider": "anthropic",
    "input_tokens": 1200,
    "output_tokens": 340,
    "cached_input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cost_usd": 0.0087,
    "pricing_version": "2026-05-01",
    "latency_ms": 2310,
    "stop_reason": "end_turn",
    "produced_tool_calls": 0,
    "produced_thinking_blocks": 0,
}


def _sample_events(count: int) -> list[Event]:
    return [make_event("llm.call_completed", LLM_CALL_COMPLETED, session_id="sess_bench") for _ in range(count)]


def _per_call_us(action: Callable[[], object], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        action()
    return (time.perf_counter() - start) / repeat * 1e6


def _noop(event: Event) -> None:
    return None


async def _async_noop(event: Event) -> None:
    return None


def bus_throughput(handler: Callable[[Event], Any], events: list[Event]) -> float:
    """Events/s from the first emit until flush() returns, one fast-path subscriber."""
    bus = EventBus(mode=BusMode.STRICT, queue_capacity=len(events) + 100)
    bus.subscribe(Subscription(EventFilter(), handler, "bench-noop", fast_path=True))
    bus.flush()
    gc.collect()
    start = time.perf_counter()
    for event in events:
        bus.emit(event)
    bus.flush(timeout=120)
    elapsed = time.perf_counter() - start
    bus.shutdown()
    return len(events) / elapsed


def emit_new_throughput(count: int) -> float:
    """Events/s for make_event + emit (bus.emit_new) end to end, one no-op fast-path subscriber."""
    bus = EventBus(mode=BusMode.STRICT, queue_capacity=count + 100)
    bus.subscribe(Subscription(EventFilter(), _noop, "bench-noop", fast_path=True))
    bus.flush()
    start = time.perf_counter()
    for _ in range(count):
        bus.emit_new("llm.call_completed", LLM_CALL_COMPLETED, session_id="sess_bench")
    bus.flush(timeout=120)
    elapsed = time.perf_counter() - start
    bus.shutdown()
    return count / elapsed


def run() -> dict[str, float]:
    events = _sample_events(EVENTS_PER_RUN)
    sync_runs = [bus_throughput(_noop, events) for _ in range(RUNS)]
    async_runs = [bus_throughput(_async_noop, events) for _ in range(RUNS)]
    emit_new_runs = [emit_new_throughput(EVENTS_PER_RUN) for _ in range(3)]

    sample = events[0]
    validate_us = _per_call_us(lambda: validate_event(sample), 20_000)
    # emit() cost on the caller's side, measured on a bus whose worker is not draining concurrently
    # for long: capacity large enough, no subscribers, one flush afterwards.
    quiet = EventBus(mode=BusMode.STRICT, queue_capacity=len(events) + 100)
    start = time.perf_counter()
    for event in events:
        quiet.emit(event)
    emit_us = (time.perf_counter() - start) / len(events) * 1e6
    quiet.shutdown()
    make_event_us = _per_call_us(
        lambda: make_event("llm.call_completed", LLM_CALL_COMPLETED, session_id="sess_bench"), 20_000
    )
    figures = {
        "events_per_run": float(EVENTS_PER_RUN),
        "bus_events_per_s_sync_noop_median": statistics.median(sync_runs),
        "bus_events_per_s_async_noop_median": statistics.median(async_runs),
        "emit_new_events_per_s_median": statistics.median(emit_new_runs),
        "emit_us_per_event": emit_us,
        "validate_event_us": validate_us,
        "emit_overhead_beyond_validation_us": emit_us - validate_us,
        "make_event_us": make_event_us,
    }
    return figures


if __name__ == "__main__":
    results = run()
    print(json.dumps({k: round(v, 2) for k, v in results.items()}, indent=2))
