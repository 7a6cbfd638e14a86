"""Persistence and events: trace-store insert latency, bus -> trace store throughput, session load.

Reuses the measurements of bench/bench_store.py (trace store and session store) and
bench/bench_bus.py (bus alone), repeated and reduced to medians here, with each result checked:
every event inserted is in the table, every message loaded comes back. All work happens in a
temporary directory on the machine's disk, WAL mode with synchronous=NORMAL (open_database).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

from bench import bench_bus, bench_store
from bench.context import RunContext
from bench.figures import METIS, Figure, Target
from bench.scenarios import WrongAnswerError
from bench.timing import median
from metis_core.events.catalog import make_event
from metis_core.trace import TraceStore

INSERT_P95_TARGET = Target("max", 1.0)
THROUGHPUT_TARGET = Target("min", 20_000)
SESSION_LOAD_TARGET = Target("max", 0.5)


def _insert_p95_ms(folder: Path, runs: int) -> tuple[float, int]:
    p95s = []
    for run in range(runs):
        sub = folder / f"latency-{run}"
        sub.mkdir()
        _, p95 = bench_store._single_insert_latency_ms(sub)
        with TraceStore(sub / "latency.db") as store:
            stored = store.count()
        if stored != bench_store.LATENCY_SAMPLES:
            raise WrongAnswerError(f"trace store holds {stored} events, {bench_store.LATENCY_SAMPLES} inserted")
        p95s.append(p95)
    return median(p95s), runs * bench_store.LATENCY_SAMPLES


def _bus_to_store(folder: Path, runs: int) -> list[float]:
    rates = []
    for run in range(runs):
        sub = folder / f"bus-{run}"
        sub.mkdir()
        rates.append(bench_store._bus_events_per_second(sub))  # asserts every event reached the table
    return rates


def _bus_alone(events: int, runs: int) -> list[float]:
    sample = [make_event("llm.call_completed", bench_bus.LLM_CALL_COMPLETED, session_id="sess_bench")
              for _ in range(events)]
    return [bench_bus.bus_throughput(bench_bus._noop, sample) for _ in range(runs)]


def run(ctx: RunContext) -> list[Figure]:
    sizes = ctx.sizes
    runs = 3 if ctx.quick else 5
    bench_store.EVENTS = sizes.store_events
    bench_store.SESSION_MESSAGES = sizes.session_messages
    bench_store.LATENCY_SAMPLES = 300 if ctx.quick else 1_000
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="metis-bench-") as tmp, contextlib.redirect_stdout(io.StringIO()):
        folder = Path(tmp)
        p95, count = _insert_p95_ms(folder, runs)
        figures.append(Figure("store", "trace store single-event insert p95 (WAL, NORMAL)", METIS, p95, "ms", count,
                              target=INSERT_P95_TARGET))
        rates = _bus_to_store(folder, runs)
        figures.append(Figure("store", "sustained events/s, bus -> trace store", METIS, median(rates), "events/s",
                              runs * sizes.store_events, target=THROUGHPUT_TARGET, higher_is_better=True))
        bus = _bus_alone(sizes.store_events, runs)
        figures.append(Figure("store", "events/s through the bus alone (no-op subscriber)", METIS, median(bus),
                              "events/s", runs * sizes.store_events, target=Target("report"), higher_is_better=True))
        loads = []
        for run in range(runs):
            sub = folder / f"session-{run}"
            sub.mkdir()
            loads.append(bench_store._session_load_seconds(sub))  # asserts every message came back
        figures.append(Figure("store", f"load a {sizes.session_messages:,}-message session", METIS, median(loads), "s",
                              runs, target=SESSION_LOAD_TARGET))
    return figures
