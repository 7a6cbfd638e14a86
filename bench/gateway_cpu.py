"""CPU per request of the gateway and the pass-through floor, read from each server process's clock.

    python -m bench.gateway_cpu [--calls N] [--concurrency C] [--py-spy SECONDS]

Starts the same processes as the gateway case (bench/server.py upstream, the floor and the
gateway under uvicorn with uvloop/httptools and no access log), sends the case's non-streaming
request N times from C concurrent clients, waits until the gateway's record holds all N calls (its
backlog is work still to do), and divides each server's user+system CPU time (all its threads, from
/proc) by N; the load generator's own CPU is printed beside it. With --py-spy, one
gateway worker is sampled under the same load for that many seconds, only the thread holding the GIL (collapsed
stacks written to a file): where the CPU goes, not where threads wait.
Runs with whatever interpreter starts it (bench/.venv or .venv); nothing is written to results.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.cases.gateway import FLOOR_NAME, REQUEST, _caught_up, _settled_turns, _targets
from bench.figures import METIS
from bench.load import Load, cpu_seconds, server_cpu_seconds, server_pids
from bench.server import serve_in_process


def _threads(pids: list[int]) -> dict[int, float]:
    """CPU seconds of each thread of the processes, by native thread id."""
    found: dict[int, float] = {}
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                found[int(task.name)] = cpu_seconds(pid, int(task.name))
            except OSError:  # a thread that ended between the listing and the read
                continue
    return found


def _workers(pids: list[int]) -> list[int]:
    """The server's worker processes: those whose parent is one of its own (not the supervisor)."""
    parents = {pid: int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]) for pid in pids}
    return [pid for pid, parent in parents.items() if parent in parents] or pids


def _thread_names(pids: list[int], python: str) -> dict[int, str]:
    """Native thread id -> "worker pid: Python thread name", from `py-spy dump` when it is installed."""
    spy = shutil.which("py-spy", path=str(Path(python).parent))
    if spy is None:
        return {}
    names: dict[int, str] = {}
    for pid in pids:
        out = subprocess.run([spy, "dump", "--json", "-p", str(pid)], capture_output=True, text=True).stdout
        for thread in json.loads(out or "[]"):
            names[int(thread["os_thread_id"])] = f"{pid}: {thread.get('thread_name') or thread['thread_id']}"
    return names


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.gateway_cpu")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--py-spy", type=int, default=0, dest="py_spy")
    args = parser.parse_args()
    with serve_in_process(sys.executable) as upstream:
        _measure(upstream, args)


def _measure(upstream: str, args: argparse.Namespace) -> None:
    python = sys.executable
    with _targets(upstream, python) as (ways, _missing, home):
        for name in (FLOOR_NAME, METIS):
            base, headers = ways[name]
            port = int(base.rsplit(":", 1)[1])
            pids = server_pids(port)
            asyncio.run(Load(REQUEST, concurrency=args.concurrency).calls(base, headers, 300))  # warm up
            label = name
            recorded = asyncio.run(_settled_turns(home)) if name == METIS else 0
            cpu0, own0, threads0 = server_cpu_seconds(port), resource.getrusage(resource.RUSAGE_SELF), _threads(pids)
            load = Load(REQUEST, concurrency=args.concurrency)
            wall = asyncio.run(load.calls(base, headers, args.calls))
            lag = asyncio.run(_caught_up(home, recorded + load.answered)) if name == METIS else 0.0
            wall += lag  # a call counts once answered and recorded: the record's backlog is work still to do
            cpu1, own1, threads1 = server_cpu_seconds(port), resource.getrusage(resource.RUSAGE_SELF), _threads(pids)
            own = (own1.ru_utime + own1.ru_stime - own0.ru_utime - own0.ru_stime) / args.calls
            print(f"{label:<20} server CPU {(cpu1 - cpu0) / args.calls * 1e3:6.3f} ms/call   "
                  f"load generator {own * 1e3:6.3f} ms/call   {args.calls / wall:7.1f} req/s "
                  f"(c={args.concurrency}, {load.failed} failed; record caught up {lag:.2f} s after)", flush=True)
            names = _thread_names(pids, python)
            for tid, seconds in sorted(threads1.items(), key=lambda item: -item[1] + threads0.get(item[0], 0.0)):
                spent = (seconds - threads0.get(tid, 0.0)) / args.calls
                if spent > 0:
                    print(f"    thread {names.get(tid, tid)!s:<40} {spent * 1e3:6.3f} ms/call")
            if name == METIS and args.py_spy:
                spy = shutil.which("py-spy", path=str(Path(python).parent)) or "py-spy"
                out = Path("bench/results/profiles/gateway-py-spy.txt")
                out.parent.mkdir(parents=True, exist_ok=True)
                sampler = subprocess.Popen([spy, "record", "-p", str(_workers(pids)[0]), "-d", str(int(args.py_spy)),
                                            "-r", "500", "-f", "raw", "-o", str(out), "--threads", "--gil"])
                deadline = time.monotonic() + args.py_spy + 1
                while time.monotonic() < deadline:
                    asyncio.run(Load(REQUEST, concurrency=args.concurrency).calls(base, headers, 500))
                sampler.wait()
                print(f"py-spy collapsed stacks: {out}")


if __name__ == "__main__":
    main()
