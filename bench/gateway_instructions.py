"""Instructions per gateway call on the event loop's thread, counted by callgrind: a figure load does not move.

    python -m bench.gateway_instructions [--calls N] [--stream]

CPU time on this shared machine swings ±10 % with what else runs; instruction counts do not (two
runs of the same tree agree within ~0.5 %). This builds the gateway as `serve` does, drives its ASGI
app in-process on uvloop with raw ASGI messages (no HTTP client in the process, so the main thread
is the gateway's loop), warms up with 300 calls, then counts N calls under valgrind's callgrind
(`--instr-atstart=no`, switched on and off around the counted calls). Needs `valgrind` on PATH
(apt: valgrind); the upstream is bench/server.py in its own process, not counted. It measures the
amount of code run, not cache misses: compare trees with it, and confirm with `bench.gateway_cpu`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

import metis_core
from bench.callgrind import switch
from bench.cases.gateway import REQUEST, _issue_key
from bench.server import serve_in_process

WARMUP = 300


async def _one(app: Any, body: bytes, token: bytes) -> None:
    """One POST /v1/messages, as uvicorn would hand it over; the client never leaves."""
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/v1/messages", "raw_path": b"/v1/messages",
             "query_string": b"", "root_path": "", "client": ("127.0.0.1", 5000), "server": ("gateway", 80),
             "headers": [(b"host", b"gateway"), (b"content-type", b"application/json"), (b"x-api-key", token),
                         (b"content-length", str(len(body)).encode())], "state": {}}
    done = asyncio.get_running_loop().create_future()
    read = False
    status: list[int] = []

    async def receive() -> dict[str, Any]:
        nonlocal read
        if not read:
            read = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done  # the body is read: a client that stays until its answer ends
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif not message.get("more_body", False) and not done.done():
            done.set_result(None)

    await app(scope, receive, send)
    if status != [200]:
        raise RuntimeError(f"the gateway answered {status}")


async def _drive(app: Any, token: str, calls: int, stream: bool) -> None:
    service = app.state.service
    body = orjson.dumps(dict(REQUEST, stream=True) if stream else REQUEST)
    for index in range(WARMUP + calls):
        if index == WARMUP:
            service.drain()
            switch("on")
        await _one(app, body, token.encode())
    switch("off")
    service.drain()
    await service.aclose()


def _counted(calls: int, stream: bool) -> None:
    """Runs inside valgrind: the gateway and the counted calls."""
    import uvloop

    with serve_in_process(sys.executable) as upstream:
        home = Path(tempfile.mkdtemp(prefix="metis-gateway-instructions-"))
        token = _issue_key(home / "metis.db")
        os.environ.update({"METIS_HOME": str(home), "METIS_ANTHROPIC_BASE_URL": upstream,
                           "ANTHROPIC_API_KEY": "bench-upstream-key", "METIS_GATEWAY_WORKSPACE": str(home)})
        from metis_core.gateway.serve import build_app

        uvloop.run(_drive(build_app(), token, calls, stream))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.gateway_instructions")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        _counted(args.calls, args.stream)
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    out = Path(tempfile.mkdtemp(prefix="metis-callgrind-"))
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
               f"--callgrind-out-file={out / 'callgrind.out'}", sys.executable, "-m", "bench.gateway_instructions",
               "--inside", "--calls", str(args.calls), *(["--stream"] if args.stream else [])]
    subprocess.run(command, check=True, capture_output=True)
    totals = {}
    for path in sorted(out.glob("callgrind.out-*")):
        line = next((x for x in path.read_text().splitlines() if x.startswith("totals:")), "totals: 0")
        totals[path.name.rsplit("-", 1)[1]] = int(line.split()[1])
    loop = totals.get("01", 0)
    kind = "streamed" if args.stream else "non-streamed"
    print(f"metis_core: {Path(metis_core.__file__).parent}")
    print(f"event loop thread: {loop / args.calls:,.0f} instructions per {kind} call ({args.calls} calls)")
    for thread, count in totals.items():
        if thread != "01" and count:
            print(f"    thread {thread}: {count / args.calls:,.0f} per call")


if __name__ == "__main__":
    main()
