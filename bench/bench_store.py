"""Benchmark of the persistence layer: trace write throughput, insert latency, session load time.

Run as `.venv/bin/python bench/bench_store.py`. Works in a temporary directory, prints one line
per figure and returns them as a dict from `run()`. It measures; it asserts nothing.
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from metis_core.events.bus import EventBus
from metis_core.events.catalog import make_event
from metis_core.events.envelope import Actor, Event, Sensitivity
from metis_core.messages import (
    Message,
    MessageMetadata,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    Usage,
    user_message,
)
from metis_core.store import SessionStore
from metis_core.trace import TraceStore

EVENTS = 20_000
LATENCY_SAMPLES = 1_000
SESSION_MESSAGES = 10_000
_TURN_STARTED = {
    "user_message_hash": "h",
    "estimated_input_tokens": 1,
    "has_images": False,
    "has_tool_calls_in_history": False,
}


def _events(count: int) -> list[Event]:
    return [
        Event(session_id="sess_bench", type="tool.called", actor=Actor.TOOL, payload={"i": i, "tool": "read_file"},
              sensitivity=Sensitivity.PSEUDONYMOUS)
        for i in range(count)
    ]  # fmt: skip


def _direct_events_per_second(folder: Path) -> float:
    events = _events(EVENTS)
    with TraceStore(folder / "direct.db") as store:
        started = time.perf_counter()
        for event in events:
            store.write_event(event)  # the subscriber's own path, batched commits
        store.flush()
        return EVENTS / (time.perf_counter() - started)


def _bus_events_per_second(folder: Path) -> float:
    events = [make_event("turn.started", _TURN_STARTED, session_id="sess_bench") for _ in range(EVENTS)]
    with TraceStore(folder / "bus.db") as store, EventBus(mode="lenient", queue_capacity=EVENTS + 10) as bus:
        store.attach(bus)
        started = time.perf_counter()
        for event in events:
            bus.emit(event)
        bus.flush(60)
        store.flush()
        elapsed = time.perf_counter() - started
        assert store.count() >= EVENTS
        return EVENTS / elapsed


def _single_insert_latency_ms(folder: Path) -> tuple[float, float]:
    events = _events(LATENCY_SAMPLES)
    with TraceStore(folder / "latency.db", commit_every=1) as store:
        samples = []
        for event in events:
            started = time.perf_counter()
            store.write_event(event)
            samples.append(time.perf_counter() - started)
    samples.sort()
    return statistics.median(samples) * 1e3, samples[int(len(samples) * 0.95) - 1] * 1e3


def _session_load_seconds(folder: Path) -> float:
    with SessionStore(folder / "sessions.db") as store:
        session = store.create_session(folder)
        messages: list[Message] = []
        meta = MessageMetadata(
            model="anthropic:claude-sonnet-4-6",
            provider="anthropic",
            routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="anthropic:claude-sonnet-4-6",
                                          reason="default"),
            usage=Usage(input_tokens=1200, output_tokens=300, cost_usd=Decimal("0.0081")),
        )  # fmt: skip
        for i in range(SESSION_MESSAGES // 2):
            messages.append(user_message(f"question {i}: " + "lorem ipsum " * 20, session_id=session.id))
            messages.append(
                Message(role=Role.ASSISTANT, session_id=session.id, content=[TextBlock(text="answer " * 60)],
                        metadata=meta)
            )  # fmt: skip
        store.append_messages(messages)
        best = float("inf")
        for _ in range(3):
            gc.collect()
            started = time.perf_counter()
            loaded = store.load_messages(session.id)
            best = min(best, time.perf_counter() - started)
            assert len(loaded) == SESSION_MESSAGES
            del loaded
        return best


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="metis-bench-") as tmp:
        folder = Path(tmp)
        p50, p95 = _single_insert_latency_ms(folder)
        results: dict[str, Any] = {
            "trace_direct_events_per_s": round(_direct_events_per_second(folder)),
            "trace_bus_events_per_s": round(_bus_events_per_second(folder)),
            "single_insert_p50_ms": round(p50, 4),
            "single_insert_p95_ms": round(p95, 4),
            "session_load_10k_messages_s": round(_session_load_seconds(folder), 3),
        }
    for key, value in results.items():
        print(f"{key:32} {value}")
    return results


if __name__ == "__main__":
    run()
    sys.exit(0)
