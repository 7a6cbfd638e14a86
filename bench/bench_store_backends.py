"""Trace figures on SQLite beside PostgreSQL, in one run: insert latency and sustained bus -> store rate.

Run as `.venv/bin/python -m bench.bench_store_backends [postgresql://...]`. Without a URL it starts a
throwaway server from the machine's PostgreSQL binaries (tests/postgres_server.py). Prints one line
per figure and returns them from `run()`. It measures; it asserts nothing but completeness.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_store import _TURN_STARTED, _events  # the same events as the SQLite-only bench
from metis_core.events.bus import EventBus
from metis_core.events.catalog import make_event
from metis_core.trace import TraceStore

SUSTAINED_EVENTS = 50_000
LATENCY_SAMPLES = 1_000


def _sustained_bus_events_per_second(location: Path | str) -> float:
    events = [make_event("turn.started", _TURN_STARTED, session_id="sess_bench") for _ in range(SUSTAINED_EVENTS)]
    with TraceStore(location) as store, EventBus(mode="lenient", queue_capacity=SUSTAINED_EVENTS + 10) as bus:
        store.attach(bus)
        started = time.perf_counter()
        for event in events:
            bus.emit(event)
        bus.flush(120)
        store.flush()  # stored and committed, not just handed over
        elapsed = time.perf_counter() - started
        assert len(store.replay("sess_bench")) == SUSTAINED_EVENTS
        return SUSTAINED_EVENTS / elapsed


def _latencies_ms(location: Path | str) -> tuple[float, float, float]:
    """p95 of the bus handler (`write_event`), p50 / p95 of one committed insert (`append`)."""
    handler, committed = [], []
    with TraceStore(location, commit_every=1) as store:
        for event in _events(LATENCY_SAMPLES):
            started = time.perf_counter()
            store.write_event(event)
            handler.append(time.perf_counter() - started)
        store.flush()
        for event in _events(LATENCY_SAMPLES):
            started = time.perf_counter()
            store.append(event)
            committed.append(time.perf_counter() - started)
    handler.sort()
    committed.sort()
    p95 = int(LATENCY_SAMPLES * 0.95) - 1
    return handler[p95] * 1e3, statistics.median(committed) * 1e3, committed[p95] * 1e3


def _measure(name: str, location_for: Any) -> dict[str, float]:
    rate = _sustained_bus_events_per_second(location_for("sustained"))
    handler_p95, insert_p50, insert_p95 = _latencies_ms(location_for("latency"))
    figures = {"bus_to_store_events_per_s": rate, "handler_p95_ms": handler_p95,
               "insert_commit_p50_ms": insert_p50, "insert_commit_p95_ms": insert_p95}
    for key, value in figures.items():
        print(f"{name:10} {key:28} {value:12,.3f}")
    return figures


def run(postgres_url: str | None = None) -> dict[str, dict[str, float]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from postgres_server import PostgresServer, find_bin_dir

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="metis-bench-") as tmp:
        results["sqlite"] = _measure("sqlite", lambda name: Path(tmp) / f"{name}.db")
    server = None
    if postgres_url is None:
        bin_dir = find_bin_dir()
        if bin_dir is None:
            print("postgres   skipped: no PostgreSQL binaries (apt-get install postgresql)")
            return results
        server = PostgresServer(bin_dir)
        server.start()
    try:
        if server is not None:
            results["postgres"] = _measure("postgres", lambda name: server.fresh_database_url())
        else:
            results["postgres"] = _measure("postgres", lambda name: postgres_url)
    finally:
        if server is not None:
            server.stop()
    return results


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else None)
