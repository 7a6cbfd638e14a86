"""CPU per call of the gateway's record alone: the record writer and the bus thread, in fixed batches.

    python -m bench.gateway_record [--calls N] [--batch B] [--callgrind]

Runs 50 real calls through the gateway's ASGI app (the bench request, bench/server.py upstream) to
capture what a call's record is made of (the key, the inbound request, the answer), then replays
N calls' records through `CallRecord` -> `RecordWriter` -> the bus -> the trace store, with no HTTP
and no event loop: B calls queued while the writer is held, then released as one batch, as a busy
gateway batches them. Prints each thread's CPU per call. The gateway's own benchmarks cannot give
these figures steadily: their batch sizes follow the machine's speed (under callgrind, ~1 call).
With --callgrind, the replay runs under valgrind and prints instructions per call per thread instead
(deterministic: compare trees with it). Each replayed call gets fresh session, message and tool ids.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from bench.cases.gateway import REQUEST, _issue_key
from bench.gateway_instructions import _one
from bench.server import serve_in_process

CAPTURED_CALLS = 50
WARMUP = 300


def _capture(home: Path) -> list[tuple[Any, ...]]:
    """(key, shape, request, asked model, model, final answer, estimated tokens) of real gateway calls.

    The capture wraps the bus's `emit_trusted` and, at each llm.call_completed, finds that call's record
    among the collector's objects (its request not yet touched by the writer); the answer is read
    back from the store once the calls are written."""
    import gc

    import uvloop

    from metis_core.events.bus import EventBus
    from metis_core.gateway.serve import build_app
    from metis_core.store.sessions import SessionStore

    captured: list[tuple[Any, ...]] = []
    # The bus's last interpreted step of a trusted emission: `enqueue_trusted` (since 2026-11-26), or
    # `emit_trusted` in older trees (so the bench still measures them).
    hook = "enqueue_trusted" if hasattr(EventBus, "enqueue_trusted") else "emit_trusted"
    original = getattr(EventBus, hook)

    def keep(event_type: str, session_id: str) -> None:
        if event_type == "llm.call_completed":
            record = next(o for o in gc.get_objects() if type(o).__name__ == "CallRecord"
                          and getattr(o, "session_id", None) == session_id)
            captured.append((record.key, record.shape, copy.deepcopy(record.request), record.asked_model,
                             record.model, record.session_id, record.estimated_tokens))

    def capturing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if hook == "enqueue_trusted":
            keep(args[0].type, args[0].session_id)
        else:
            keep(args[0], kwargs["session_id"])
        return original(self, *args, **kwargs)

    setattr(EventBus, hook, capturing)

    async def drive(app: Any, token: str) -> None:
        for _ in range(CAPTURED_CALLS):
            await _one(app, orjson.dumps(REQUEST), token.encode())
        app.state.service.drain()
        await app.state.service.aclose()

    with serve_in_process(sys.executable) as upstream:
        token = _issue_key(home / "metis.db")
        os.environ.update({"METIS_HOME": str(home), "METIS_ANTHROPIC_BASE_URL": upstream,
                           "ANTHROPIC_API_KEY": "bench-upstream-key", "METIS_GATEWAY_WORKSPACE": str(home)})
        uvloop.run(drive(build_app(), token))
    setattr(EventBus, hook, original)
    with SessionStore(home / "metis.db") as store:  # each call's answer: its session's last message
        return [(*call[:5], store.load_messages(call[5])[-1], call[6]) for call in captured]


def _replay(calls: int, batch: int, callgrind: bool) -> None:
    from metis_core.agent.runtime import Runtime
    from metis_core.gateway.call_record import CallRecord
    from metis_core.gateway.record_writer import RecordWriter
    from metis_core.gateway.serve import tune_collector
    from metis_core.ids import new_session_id, new_tool_use_id, new_ulid
    from metis_core.messages import ToolUseBlock

    home = Path(tempfile.mkdtemp(prefix="metis-gateway-record-"))
    captured = _capture(home / "capture")
    runtime = Runtime(home=home / "replay", connect_mcp=False)
    writer = RecordWriter(runtime.store, bus=runtime.bus, linger=0, max_batch=10**6, max_backlog=10**7)
    tune_collector()

    def one(index: int) -> None:
        key, shape, request, asked, model, final, estimate = captured[index % len(captured)]
        sid = new_session_id()
        request = copy.copy(request)
        request.messages = [m.model_copy(update={"id": new_ulid(), "session_id": sid}) for m in request.messages]
        content = [b.model_copy(update={"id": new_tool_use_id()}) if isinstance(b, ToolUseBlock) else b
                   for b in final.content]
        final = final.model_copy(update={"id": new_ulid(), "session_id": sid, "content": content}, deep=True)
        record = CallRecord(runtime, writer, key, shape, sid, request, asked)
        record.begin(estimate)
        record.attempt_started(model, 1)
        record.completed(final)

    def burst(first: int, count: int) -> None:
        held, release = threading.Event(), threading.Event()

        def hold() -> None:  # the writer waits here while the burst queues behind it
            held.set()
            release.wait(60)

        writer.submit(hold)
        held.wait(60)
        for index in range(first, first + count):
            one(index)
        release.set()
        writer.drain()
        runtime.bus.flush()

    burst(0, WARMUP)
    threads = {"record writer": _thread("metis-gateway-record"), "bus": _thread("metis-event-bus")}
    if callgrind:
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True, capture_output=True)
    before = {name: _cpu(thread) for name, thread in threads.items()}
    for first in range(0, calls, batch):
        burst(first, min(batch, calls - first))
    spent = {name: _cpu(thread) - before[name] for name, thread in threads.items()}
    if callgrind:
        subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], check=True, capture_output=True)
    else:
        for name, seconds in spent.items():
            print(f"{name + ' thread':<22} {seconds / calls * 1e6:8.1f} µs per call")
        print(f"{'both':<22} {sum(spent.values()) / calls * 1e6:8.1f} µs per call  ({calls} calls, batches of {batch})")
        turns = len(runtime.trace.events(types=["turn.completed"]))
        print(f"recorded: {turns} turns, {len(runtime.store.list_sessions(limit=10**6))} sessions "
              f"({WARMUP} of each warming up)")
    writer.close()


def _thread(prefix: str) -> threading.Thread:
    return next(thread for thread in threading.enumerate() if thread.name.startswith(prefix))


def _cpu(thread: threading.Thread) -> float:
    assert thread.ident is not None
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def _under_callgrind(calls: int, batch: int) -> None:
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    out = Path(tempfile.mkdtemp(prefix="metis-callgrind-"))
    command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
               f"--callgrind-out-file={out / 'callgrind.out'}", sys.executable, "-m", "bench.gateway_record",
               "--inside", "--calls", str(calls), "--batch", str(batch)]
    subprocess.run(command, check=True, capture_output=True)
    totals = {}
    for path in sorted(out.glob("callgrind.out-*")):
        line = next((x for x in path.read_text().splitlines() if x.startswith("totals:")), "totals: 0")
        totals[path.name.rsplit("-", 1)[1]] = int(line.split()[1])
    # The two threads that ran the replay; numbered in creation order, and the replay's bus dispatcher
    # (made with its runtime) comes before its record writer (made at the first record job).
    replay = [thread for thread in totals if thread != "01"]  # 01: the main thread, building the calls
    busiest = sorted(sorted(replay, key=lambda thread: totals[thread])[-2:])
    print(f"instructions per call ({calls} calls, batches of {batch}):")
    for name, thread in zip(("bus thread", "record writer thread"), busiest, strict=True):
        print(f"    {name:<22} {totals[thread] / calls:12,.0f}  (callgrind thread {thread})")
    print(f"    {'both':<22} {sum(totals[t] for t in busiest) / calls:12,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.gateway_record")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.callgrind:
        _under_callgrind(args.calls, args.batch)
        return
    _replay(args.calls, args.batch, callgrind=args.inside)


if __name__ == "__main__":
    main()
