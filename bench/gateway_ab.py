"""Interleaved A/B of two trees' gateways: server CPU per request and rate at 64 clients.

    python -m bench.gateway_ab TREE_A TREE_B [ROUNDS] [SECONDS]

Each tree's `metis_core` serves its own gateway (PYTHONPATH, 2 workers, its own METIS_HOME, the same
bench upstream); the windows alternate A B B A ..., and each window lasts until its record caught up.
CPU is user + system of every server process from /proc (bench/load.py).
"""

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench.cases.gateway import REQUEST, _caught_up, _free_port, _issue_key, _process, _settled_turns, _uvicorn
from bench.load import Load, server_cpu_seconds
from bench.server import serve_in_process


async def _windows(servers: dict[str, tuple[str, dict[str, str], Path]], rounds: int, seconds: float) -> None:
    loads = {name: Load(REQUEST, concurrency=64) for name in servers}
    for name, (base, headers, _) in servers.items():
        await loads[name].for_seconds([(base, headers)], 1.5)
    found: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    names = list(servers)
    for index in range(rounds):
        for name in names if index % 2 == 0 else names[::-1]:
            base, headers, home = servers[name]
            port = int(base.rsplit(":", 1)[1])
            recorded = await _settled_turns(home)
            before = server_cpu_seconds(port)
            load = loads[name]
            rate = await load.for_seconds([(base, headers)], seconds)
            lag = await _caught_up(home, recorded + load.answered)
            cpu_ms = (server_cpu_seconds(port) - before) / max(load.answered, 1) * 1e3
            found[name].append((cpu_ms, load.answered / (load.answered / rate + lag) if load.answered else 0.0))
            print(f"round {index} {name}: {cpu_ms:.3f} ms CPU/request, {found[name][-1][1]:.0f} req/s", flush=True)
    for name, rows in found.items():
        cpus = [row[0] for row in rows]
        print(f"{name}: CPU/request median {statistics.median(cpus):.3f} ms ({min(cpus):.3f}-{max(cpus):.3f}), "
              f"rate median {statistics.median(row[1] for row in rows):.0f} req/s")
    ratios = sorted(b[0] / a[0] for a, b in zip(found[names[0]], found[names[1]], strict=True))
    print("per-round B/A CPU ratio:", " ".join(f"{r:.3f}" for r in ratios), f"median {statistics.median(ratios):.3f}")


def main() -> None:
    trees = {"A": sys.argv[1], "B": sys.argv[2]}
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 3.0
    with serve_in_process(sys.executable) as upstream, contextlib.ExitStack() as stack:
        servers = {}
        for name, tree in trees.items():
            home = Path(tempfile.mkdtemp(prefix="metis-gateway-ab-"))
            token = _issue_key(home)
            port = _free_port()
            env = {**os.environ, "PYTHONPATH": tree, "METIS_HOME": str(home), "METIS_ANTHROPIC_BASE_URL": upstream,
                   "ANTHROPIC_API_KEY": "bench-upstream-key", "METIS_GATEWAY_WORKSPACE": str(home)}
            stack.enter_context(_process(_uvicorn("metis_core.gateway.serve:build_app", port, sys.executable), env,
                                         f"http://127.0.0.1:{port}"))
            servers[f"{name} {Path(tree).name}"] = (f"http://127.0.0.1:{port}", {"x-api-key": token}, home)
        asyncio.run(_windows(servers, rounds, seconds))


if __name__ == "__main__":
    main()
