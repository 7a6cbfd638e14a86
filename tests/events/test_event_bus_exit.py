"""A program that returns without `bus.shutdown()` keeps its events; a stuck handler cannot hang the exit;
an overload logs one ERROR line per episode, not one per refused event."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from event_payload_samples import MINIMAL_PAYLOADS

from metis_core.errors import EventBusOverflowError
from metis_core.events.bus import BusMode, EventBus, EventFilter, Subscription
from metis_core.events.catalog import make_event
from metis_core.events.envelope import Event

_PAYLOAD = json.dumps(MINIMAL_PAYLOADS["turn.started"])
_SCRIPT = """
import json, sys
from metis_core.events.bus import EventBus
from metis_core.events.catalog import make_event
from metis_core.trace import TraceStore

payload = json.loads(sys.argv[2])
store = TraceStore(sys.argv[1])
bus = EventBus(queue_capacity=10_000)
store.attach(bus)
for n in range(5000):
    bus.emit(make_event("turn.started", payload, session_id="s1"))
print(bus.queue_depth)
"""


def test_a_script_that_returns_without_shutdown_keeps_all_its_events(tmp_path: Path) -> None:
    db = tmp_path / "metis.db"
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(db), _PAYLOAD], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0  # events were still queued when the script returned
    with sqlite3.connect(db) as conn:
        kept = conn.execute("SELECT COUNT(*) FROM events WHERE type = 'turn.started'").fetchone()[0]
    assert kept == 5000


_STUCK = """
import json, sys, threading
from metis_core.events.bus import EventBus, EventFilter, Subscription
from metis_core.events.catalog import make_event

payload = json.loads(sys.argv[1])
bus = EventBus()
bus.subscribe(Subscription(EventFilter(), lambda event: threading.Event().wait(3600), "stuck", fast_path=True))
bus.emit(make_event("turn.started", payload, session_id="s1"))
"""


def test_a_stuck_handler_delays_the_exit_by_the_drain_budget_only() -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _STUCK, _PAYLOAD], capture_output=True, text=True, timeout=60,
        env={**os.environ, "METIS_BUS_EXIT_DRAIN_SECONDS": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 15
    assert "could not drain at exit" in done.stderr


def _turn_started() -> Event:
    return make_event("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id="s1")


def test_an_overload_logs_one_error_line_per_episode(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus(mode=BusMode.STRICT, queue_capacity=2)
    started, release = threading.Event(), threading.Event()

    def block(event: Event) -> None:
        started.set()
        release.wait(5)

    try:
        bus.subscribe(Subscription(EventFilter(event_types={"turn.started"}), block, "blocker", fast_path=True))
        bus.flush()
        bus.emit(_turn_started())
        assert started.wait(5)
        bus.emit(_turn_started())  # fills the queue
        refused = 0
        with caplog.at_level(logging.ERROR, logger="metis_core.events.bus"):
            for _ in range(5000):
                with pytest.raises(EventBusOverflowError):
                    bus.emit(_turn_started())
                refused += 1
            release.set()
            bus.flush()
            bus.emit(_turn_started())  # accepted again: the episode's total is logged once
        lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert refused == 5000 and 2 <= len(lines) <= 5, lines
        assert lines[0].startswith("event bus overflow: rejected event_type=turn.started")
        assert lines[-1].startswith("event bus overflow ended: 5000 events refused")
    finally:
        release.set()
        bus.shutdown(drain=False, timeout=2)
