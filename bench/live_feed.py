"""Events/s through PostgreSQL NOTIFY to a `metis serve` WebSocket client, and the delay of one event.

Run as `.venv/bin/python -m bench.live_feed [--events N]`. Starts a throwaway PostgreSQL server
(tests/postgres_server.py) and a real `metis serve` process on it; this process writes events with
its own TraceStore (another instance, as a gateway would) while a WebSocket client of `metis serve`
counts what arrives. Prints the figures and writes bench/results/live-feed-<stamp>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from bench.bench_store import _TURN_STARTED
from bench.report import keep_named
from metis_core.events.bus import EventBus
from metis_core.events.catalog import make_event
from metis_core.gateway.keys import KeyService, KeyTerms
from metis_core.store.gateway_keys import open_gateway_key_store
from metis_core.trace import TraceStore

BATCH = 100
"""Events per committed transaction in the throughput run (the trace batcher's usual size; --batch)."""
SINGLE_EVENTS = 200
SINGLE_GAP = 0.01


def _serve(url: str, home: Path, port: int, queue: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "METIS_HOME": str(home), "METIS_DATABASE_URL": url,
           "METIS_OLLAMA_PROBE_URL": "http://127.0.0.1:9"}
    process = subprocess.Popen([sys.executable, "-c", "from metis_core.cli.app import main; main()", "serve",
                                "--require-key", "--port", str(port), "--client-queue", str(queue)],
                               env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(process.stderr.read().decode() if process.stderr else "metis serve exited")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("metis serve did not start")
        time.sleep(0.1)


class Counter:
    def __init__(self, ws_url: str, session_id: str) -> None:
        self.ws = connect(ws_url, open_timeout=10, max_size=None).__enter__()
        self.ws.send(json.dumps({"session_ids": [session_id]}))
        self.arrivals: dict[str, float] = {}
        self.lost_reason: str | None = None
        self.done = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):  # the server going away at the end
            self._frames()

    def _frames(self) -> None:
        for text in self.ws:
            frame = json.loads(text)
            with self.done:
                if frame["kind"] == "event":
                    self.arrivals[frame["event"]["id"]] = time.perf_counter()
                elif frame["kind"] == "dropped":
                    self.lost_reason = frame["reason"]
                self.done.notify_all()

    def wait_for(self, count: int, timeout: float = 300) -> None:
        with self.done:
            if not self.done.wait_for(lambda: len(self.arrivals) >= count or self.lost_reason, timeout):
                raise RuntimeError(f"only {len(self.arrivals)} of {count} events arrived")
            if self.lost_reason:
                raise RuntimeError(f"the client was dropped: {self.lost_reason}")


def _throughput(trace: TraceStore, counter: Counter, total: int, batch: int) -> dict[str, float]:
    events = [make_event("turn.started", _TURN_STARTED, session_id="sess_burst") for _ in range(total)]
    started = time.perf_counter()
    for start in range(0, total, batch):
        trace.append_many(events[start:start + batch])
    written = time.perf_counter() - started
    counter.wait_for(total)
    last = max(counter.arrivals[e.id] for e in events)
    return {"events": total, "batch": batch, "write_s": round(written, 3),
            "events_per_s_written": round(total / written, 1),
            "events_per_s_delivered": round(total / (last - started), 1),
            "drain_after_last_write_ms": round((last - started - written) * 1e3, 1)}


def _single_delay(trace: TraceStore, counter: Counter) -> dict[str, float]:
    delays = []
    for n in range(SINGLE_EVENTS):
        event = make_event("turn.started", _TURN_STARTED, session_id="sess_single")
        trace.append(event)  # committed when this returns
        committed = time.perf_counter()
        counter.wait_for(n + 1, 30)
        delays.append((counter.arrivals[event.id] - committed) * 1e3)
        time.sleep(SINGLE_GAP)
    delays.sort()
    return {"events": SINGLE_EVENTS, "p50_ms": round(statistics.median(delays), 2),
            "p95_ms": round(delays[int(SINGLE_EVENTS * 0.95) - 1], 2), "max_ms": round(delays[-1], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=BATCH, help="events per committed write transaction")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from gateway.gateway_harness import free_port
    from postgres_server import PostgresServer, find_bin_dir

    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise SystemExit("no PostgreSQL binaries (apt-get install postgresql)")
    server = PostgresServer(bin_dir)
    server.start()
    result: dict[str, Any] = {"bench": "live_feed", "when": datetime.now(UTC).isoformat(timespec="seconds"),
                              "python": platform.python_version(), "cpus": os.cpu_count(),
                              "load_average": list(os.getloadavg())}
    try:
        url = server.fresh_database_url()
        keys = open_gateway_key_store(url)
        with EventBus() as bus:
            token = KeyService(keys, bus).issue(KeyTerms(name="bench", scope="admin")).token
        keys.close()
        with tempfile.TemporaryDirectory(prefix="metis-live-") as home:
            port = free_port()
            serve = _serve(url, Path(home), port, queue=args.events + 1_000)
            try:
                ws_url = f"ws://127.0.0.1:{port}/ws/events?token={token}"
                with TraceStore(url) as trace:
                    single = Counter(ws_url, "sess_single")
                    result["single_event_delay"] = _single_delay(trace, single)
                    burst = Counter(ws_url, "sess_burst")
                    result["throughput"] = _throughput(trace, burst, args.events, args.batch)
            finally:
                serve.terminate()
                serve.wait(30)
    finally:
        server.stop()
    keep_named("live-feed", result)


if __name__ == "__main__":
    main()
