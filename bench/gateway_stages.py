"""Where the gateway's CPU goes per call, stage by stage, measured in-process with thread CPU clocks.

    python -m bench.gateway_stages [--calls N]

Builds the gateway app as `metis gateway serve` does (serve.build_app, METIS_HOME in a temporary
directory, the upstream bench/server.py in its own process), sends the gateway case's request N
times one after another through the ASGI app (httpx's ASGI transport: no gateway socket), and
wraps each stage in a `time.thread_time()` counter: on the event loop thread, auth, body, model
resolution, admission, the inbound read, the upstream call (split into the client's request
preparation, the HTTP exchange and the answer's parsing), charging and the response; on the
record writer thread, the event jobs and the batch write; on the bus thread, the trace store's
inserts. Calls are sequential, so a stage's clock holds that call's work only. Prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from bench.cases.gateway import REQUEST, _issue_key
from bench.server import serve_in_process

SPENT: defaultdict[str, float] = defaultdict(float)
COUNT: defaultdict[str, int] = defaultdict(int)


def _timed(owner: Any, name: str, label: str) -> None:
    """Wrap owner.name (sync or async) in a thread-CPU counter under `label` (absent in an older tree: skipped)."""
    original = getattr(owner, name, None)
    if original is None:
        return
    if asyncio.iscoroutinefunction(original):

        @functools.wraps(original)
        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return await original(*args, **kwargs)
            finally:
                SPENT[label] += time.thread_time() - start
                COUNT[label] += 1

        setattr(owner, name, timed_async)
        return

    @functools.wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            SPENT[label] += time.thread_time() - start
            COUNT[label] += 1

    setattr(owner, name, timed)


def _instrument() -> None:
    from metis_core.adapters import client as client_module
    from metis_core.gateway import app as app_module
    from metis_core.gateway import call_record, continued_call, record_writer, service
    from metis_core.trace import store as trace_store
    from metis_core.transport import http as transport_http

    app_cls, service_cls = app_module.GatewayApp, service.GatewayService
    _timed(app_cls, "call", "loop: the whole handler")
    _timed(service_cls, "authenticate", "loop: key check")
    _timed(app_module, "read_json_body", "loop: body read + JSON parse")
    _timed(service_cls, "resolve", "loop: model resolution")
    _timed(service_cls, "admit", "loop: quota admission")
    _timed(service_cls, "read", "loop: inbound body -> canonical")
    _timed(service_cls, "open_call", "loop: call record opened")
    _timed(app_cls, "final_answer", "loop: upstream call (all)")  # before the direct non-streaming path
    _timed(continued_call.ContinuedCall, "answer", "loop: upstream call (all)")
    _timed(client_module.ModelClient, "_prepare", "loop: upstream: canonical -> wire")
    _timed(transport_http.HttpTransport, "asend", "loop: upstream: HTTP exchange (aiohttp)")
    _timed(client_module, "parse_response_checked", "loop: upstream: wire -> canonical")
    _timed(app_cls, "finish", "loop: charge + completion record")
    _timed(app_module, "json_response", "loop: response body -> bytes")
    _timed(record_writer.RecordWriter, "_run", "record thread: all")
    _timed(record_writer.RecordWriter, "_commit", "record thread: batch write (SQLite)")
    _timed(call_record.TurnRecorder, "emit", "record thread: events built + enqueued")
    _timed(call_record.TurnRecorder, "emit_trusted", "record thread: events built + enqueued")
    _timed(trace_store.TraceStore, "write_event", "bus thread: trace insert")


async def _drive(app: Any, token: str, calls: int, warmup: int) -> float:
    """Process CPU seconds per call over `calls` sequential calls, after `warmup` uncounted ones."""
    service = app.state.service
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        start = 0.0
        for index in range(warmup + calls):
            if index == warmup:
                service.drain()
                SPENT.clear()
                COUNT.clear()
                start = time.process_time()
            answer = await client.post("/v1/messages", json=REQUEST, headers={"x-api-key": token})
            if answer.status_code != 200:
                raise RuntimeError(f"HTTP {answer.status_code} {answer.text[:200]}")
        service.drain()
        spent = (time.process_time() - start) / calls
    await service.aclose()  # the upstream sessions live on this loop: closed on it, then the record and stores
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.gateway_stages")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with serve_in_process(sys.executable) as upstream:
        home = Path(tempfile.mkdtemp(prefix="metis-gateway-stages-"))
        token = _issue_key(home / "metis.db")
        os.environ.update({"METIS_HOME": str(home), "METIS_ANTHROPIC_BASE_URL": upstream,
                           "ANTHROPIC_API_KEY": "bench-upstream-key", "METIS_GATEWAY_WORKSPACE": str(home)})
        from metis_core.gateway.serve import build_app

        _instrument()
        app = build_app()
        process = asyncio.run(_drive(app, token, args.calls, 200))
    print(f"{'stage':<48} {'µs/call':>8}")
    for label in sorted(SPENT, key=lambda item: (item.split(":")[0], -SPENT[item])):
        print(f"{label:<48} {SPENT[label] / args.calls * 1e6:8.1f}")
    print(f"{'process CPU per call (incl. the ASGI test client)':<48} {process * 1e6:8.1f}")


if __name__ == "__main__":
    main()
