"""`metis serve` and the bus: events/s with no WebSocket client, and with one that stalls.

A real uvicorn on 127.0.0.1 serves the app over a Runtime in a temporary home; the events go
through the bus and the trace store as in a session. The stalled client subscribes to every
event, reads the answer and then nothing: it must cost the bus nothing, and be dropped (removed_after_errors)
once its queue is full. Each row checks every event reached the trace store.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from bench import bench_bus
from bench.context import RunContext
from bench.figures import METIS, Figure, Target
from bench.scenarios import WrongAnswerError
from bench.timing import median
from metis_core.agent.runtime import Runtime
from metis_core.events.filters import EventFilter
from metis_core.events.recorder import EventRecorder
from metis_core.ids import new_ulid

BURST = 5_000  # below the bus queue (10,000), flushed between bursts
CLIENT_QUEUE = 1_000
STALL_EVENTS = 20_000
"""At least this many events per stalled run: far more than the client's queue plus the socket buffers
between it and the server hold (a few MB on loopback), or the client never falls behind."""


def _server(runtime: Runtime) -> tuple[object, threading.Thread, int, str]:
    """The running server, its thread, its port and the local user's launch cookie (`name=value`)."""
    import uvicorn

    from metis_core.server.access import ServerAccess
    from metis_core.server.app import build_app

    access = ServerAccess()
    app = build_app(runtime, access=access, workspace=runtime.home, client_queue=CLIENT_QUEUE)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           ws="websockets-sansio", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    cookie = access.launch.set_cookie_header().decode("latin-1").partition(";")[0]
    return server, thread, server.servers[0].sockets[0].getsockname()[1], cookie


def _stalled_client(port: int, cookie: str) -> socket.socket:
    """A WebSocket handshake (as the local user: the Host with its port, the launch cookie) and an
    all-events subscription, on a socket that reads the `subscribed` answer and nothing after it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /ws/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  f"Cookie: {cookie}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    if not head.startswith(b"HTTP/1.1 101"):
        raise WrongAnswerError(f"the WebSocket handshake was refused: {head.splitlines()[0].decode(errors='replace')}")
    data, mask = json.dumps({}).encode(), os.urandom(4)
    sock.sendall(bytes([0x81, 0x80 | len(data)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
    if b'"subscribed"' not in _read_frame(sock):  # the server subscribes before it answers
        raise WrongAnswerError("the WebSocket client's subscription was not confirmed")
    return sock


def _read_frame(sock: socket.socket) -> bytes:
    """One unmasked server frame's payload (lengths up to 64 KiB)."""
    def take(count: int) -> bytes:
        got = b""
        while len(got) < count:
            chunk = sock.recv(count - len(got))
            if not chunk:
                raise WrongAnswerError("the server closed the WebSocket before answering the subscription")
            got += chunk
        return got

    length = take(2)[1] & 0x7F
    if length == 126:
        length = int.from_bytes(take(2), "big")
    return take(length)


def _events_per_second(runtime: Runtime, events: int) -> float:
    payload = bench_bus.LLM_CALL_COMPLETED
    session_id = f"sess_bench_{new_ulid()}"
    started = time.perf_counter()
    for done in range(0, events, BURST):
        for _ in range(min(BURST, events - done)):
            runtime.bus.emit_new("llm.call_completed", payload, session_id=session_id)
        runtime.bus.flush(timeout=60)
    elapsed = time.perf_counter() - started
    with runtime.trace.connection() as conn:
        stored = conn.execute("SELECT COUNT(*) FROM events WHERE session_id = ?", [session_id]).fetchone()[0]
    if stored != events:
        raise WrongAnswerError(f"{stored} of {events} events reached the trace store")
    return events / elapsed


def run(ctx: RunContext) -> list[Figure]:
    events = ctx.sizes.store_events
    runs = 3 if ctx.quick else 5
    with tempfile.TemporaryDirectory(prefix="metis-bench-serve-") as tmp:
        runtime = Runtime(home=Path(tmp), configured_providers=set())
        server, thread, port, cookie = _server(runtime)
        try:
            alone = [_events_per_second(runtime, events) for _ in range(runs)]
            stalled_rates, dropped_after = [], []
            for _ in range(runs):
                lifecycle = EventRecorder()
                runtime.bus.subscribe(lifecycle.subscription(EventFilter(event_types=["bus.subscriber_unregistered"]),
                                                             name="bench-lifecycle"))
                client = _stalled_client(port, cookie)
                stalled_rates.append(_events_per_second(runtime, max(events, STALL_EVENTS)))
                deadline = time.monotonic() + 10
                while not any(e.payload["reason"] == "removed_after_errors" for e in lifecycle.events):
                    if time.monotonic() > deadline:
                        raise WrongAnswerError("the stalled WebSocket client was never dropped")
                    time.sleep(0.02)
                dropped_after.append(1)
                client.close()
        finally:
            server.should_exit = True  # type: ignore[attr-defined]
            thread.join(10)
            runtime.close()
    note = f"client queue {CLIENT_QUEUE}; the stalled client was dropped in {len(dropped_after)} of {runs} runs"
    return [
        Figure("serve", "events/s, bus -> trace store, metis serve with no WebSocket client", METIS, median(alone),
               "events/s", runs * events, target=Target("report"), higher_is_better=True),
        Figure("serve", "events/s, bus -> trace store, one stalled WebSocket client (all events)", METIS,
               median(stalled_rates), "events/s", runs * max(events, STALL_EVENTS), target=Target("report"),
               higher_is_better=True, note=note),
    ]
