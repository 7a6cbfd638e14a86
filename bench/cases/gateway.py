"""The gateway in front of the local provider server: what a hop through it adds, and how much it carries.

Four ways to reach the same upstream (bench/server.py, its own process) with the same Anthropic
Messages request: directly; through the pass-through floor (the gateway's own Starlette/uvicorn
stack forwarding bytes, bench/gateway_floor.py); through `metis gateway` (auth, quotas, routing,
canonical translation, the record); and through the LiteLLM proxy when bench/.venv has it. Each
server runs in its own processes, one worker per core (WORKERS). Rows: added latency p50 and p99
per non-streaming call, added time to first byte of a stream (both over the direct call,
sequential, in alternating blocks), requests per second with 64 concurrent clients
(bench/load.py, on aiohttp; the servers' windows alternate, four rounds, median per server) and
each server's CPU per request then. Targets: gateway p50 <= floor + 1 ms; throughput >= 0.5x the
floor's and >= 3x LiteLLM's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.context import RunContext
from bench.figures import METIS, Figure, Target, paired_spread
from bench.load import Load, server_cpu_seconds
from bench.server import stop_server_process
from bench.timing import median, percentile

CASE = "gateway"
FLOOR_NAME = "pass-through floor"
LITELLM = "litellm proxy"
DIRECT = "direct"
CONCURRENCY = 64
WORKERS = min(os.cpu_count() or 1, 4)
"""Processes per server (uvicorn --workers; LiteLLM --num_workers): one per core, as each stack's
deployment docs advise for a machine of its own. The gateway's event loop holds the GIL for all of
its work, so one process uses one core; the floor, forwarding bytes, fills the machine with one."""
THROUGHPUT_SECONDS = 6.0
"""Seconds of 64-client load per server, split into THROUGHPUT_ROUNDS windows taken in turn."""
THROUGHPUT_ROUNDS = 4
"""Alternating rounds of the throughput row: the figure is each server's median round, and the spread
of the per-round ratios (`paired_spread` needs four) shows how far the machine moved it."""
MODEL = "claude-haiku-4-5"
REQUEST = {"model": MODEL, "max_tokens": 256, "system": "You are terse.",
           "messages": [{"role": "user", "content": "What is the weather in Paris?"}]}
P50_TARGET_MS = 1.0
RECORD_CATCH_UP_S = 120.0
"""How long the throughput row waits, after the window, for the gateway's record to hold every call."""
SEQUENTIAL_BUDGET_S = 20.0
"""Seconds of sequential calls (or streams) per implementation before a slow one stops."""
LITELLM_KEY = "sk-" + secrets.token_hex(32)
"""The proxy refuses to start without a master key; a random one for this run's local server."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server behind {url} exited with {process.returncode}")
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=0.2).close()
            return
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not start within {seconds:.0f} s")


@contextlib.contextmanager
def _process(command: list[str], env: dict[str, str], url: str, cwd: Path | None = None) -> Iterator[str]:
    process = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(url, process)
        yield url
    finally:
        stop_server_process(process, grace_seconds=10)


def _uvicorn(factory: str, port: int, python: str) -> list[str]:
    return [python, "-m", "uvicorn", factory, "--factory", "--host", "127.0.0.1", "--port", str(port),
            "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning",
            "--lifespan", "off", "--workers", str(WORKERS)]


def _issue_key(location: Path | str) -> str:
    """A gateway key in a fresh database, a SQLite file or a postgresql:// URL (no limits: the quota
    path runs, nothing refuses)."""
    from metis_core.events.bus import EventBus
    from metis_core.gateway.keys import KeyService, KeyTerms
    from metis_core.store.gateway_keys import open_gateway_key_store
    from metis_core.trace.store import TraceStore

    bus = EventBus()
    trace = TraceStore(location)
    trace.attach(bus)
    store = open_gateway_key_store(location)
    try:
        return KeyService(store, bus).issue(KeyTerms(name="bench")).token
    finally:
        bus.shutdown(drain=True)
        trace.close()
        store.close()


@contextlib.contextmanager
def _targets(upstream: str, python: str) -> Iterator[
        tuple[dict[str, tuple[str, dict[str, str]]], dict[str, str], Path]]:
    """Base URL and headers of each way to the upstream, with its server running, and the gateway's METIS_HOME."""
    repo = str(Path(__file__).resolve().parents[2])
    base_env = {**os.environ, "BENCH_UPSTREAM": upstream, "PYTHONPATH": repo}
    home = Path(tempfile.mkdtemp(prefix="metis-gateway-bench-"))
    missing: dict[str, str] = {}
    ways: dict[str, tuple[str, dict[str, str]]] = {DIRECT: (upstream, {"x-api-key": "bench"})}
    with contextlib.ExitStack() as stack:
        port = _free_port()
        stack.enter_context(_process(_uvicorn("bench.gateway_floor:build_app", port, python), base_env,
                                     f"http://127.0.0.1:{port}"))
        ways[FLOOR_NAME] = (f"http://127.0.0.1:{port}", {})
        token = _issue_key(home / "metis.db")
        port = _free_port()
        gateway_env = {**base_env, "METIS_HOME": str(home), "METIS_ANTHROPIC_BASE_URL": upstream,
                       "ANTHROPIC_API_KEY": "bench-upstream-key", "METIS_GATEWAY_WORKSPACE": str(home)}
        stack.enter_context(_process(_uvicorn("metis_core.gateway.serve:build_app", port, python), gateway_env,
                                     f"http://127.0.0.1:{port}"))
        ways[METIS] = (f"http://127.0.0.1:{port}", {"x-api-key": token})
        litellm = shutil.which("litellm", path=str(Path(python).parent))
        if litellm is None:
            missing[LITELLM] = "not installed in this environment (bench/.venv brings litellm[proxy])"
        else:
            port = _free_port()
            config = home / "litellm.yaml"
            config.write_text(
                "model_list:\n  - model_name: " + MODEL + "\n    litellm_params:\n      model: anthropic/" + MODEL
                + "\n      api_base: " + upstream + "\n      api_key: bench\n"
                "litellm_settings:\n  telemetry: false\n  drop_params: true\n"
                "general_settings:\n  master_key: " + LITELLM_KEY + "\n"
            )
            command = [litellm, "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
                       "--num_workers", str(WORKERS)]
            stack.enter_context(_process(command, base_env, f"http://127.0.0.1:{port}"))
            ways[LITELLM] = (f"http://127.0.0.1:{port}", {"authorization": f"Bearer {LITELLM_KEY}"})
        yield ways, missing, home
    shutil.rmtree(home, ignore_errors=True)


def _recorded_turns(home: Path) -> int:
    """Gateway calls whose record is complete: their turn.completed is in the trace (read-only, as a reader would)."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(f"file:{home / 'metis.db'}?mode=ro", uri=True, timeout=5)) as db:
        return int(db.execute("SELECT count(*) FROM events WHERE type = 'turn.completed'").fetchone()[0])


async def _settled_turns(home: Path) -> int:
    """The recorded-turn count once it stops moving (the record of earlier calls has caught up)."""
    last = -1
    while (count := _recorded_turns(home)) != last:
        last = count
        await asyncio.sleep(0.3)
    return count


async def _call(client: httpx.AsyncClient, base: str, headers: dict[str, str]) -> None:
    answer = await client.post(base + "/v1/messages", json=REQUEST, headers=headers)
    if answer.status_code != 200 or b'"content"' not in answer.content:
        raise RuntimeError(f"{base}: HTTP {answer.status_code} {answer.text[:200]}")


async def _first_byte(client: httpx.AsyncClient, base: str, headers: dict[str, str]) -> float:
    start = time.perf_counter()
    first = 0.0
    async with client.stream("POST", base + "/v1/messages", json={**REQUEST, "stream": True},
                             headers=headers) as answer:
        async for chunk in answer.aiter_raw():
            if chunk and not first:
                first = time.perf_counter() - start
        if answer.status_code != 200:
            raise RuntimeError(f"{base}: stream HTTP {answer.status_code}")
    return first


async def _sequential(ways: dict[str, tuple[str, dict[str, str]]], rounds: int, block: int,
                      measure: Callable[[str, dict[str, str]], Awaitable[float]]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in ways}
    spent = dict.fromkeys(ways, 0.0)
    for base, headers in ways.values():
        for _ in range(5):
            await measure(base, headers)
    for _ in range(rounds):
        for name, (base, headers) in ways.items():
            if spent[name] > SEQUENTIAL_BUDGET_S:
                continue  # a slow peer stops early (it has at least one block)
            start = time.perf_counter()
            for _ in range(block):
                samples[name].append(await measure(base, headers))
            spent[name] += time.perf_counter() - start
    return samples


async def _measure(ways: dict[str, tuple[str, dict[str, str]]], quick: bool, home: Path) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def timed_call(base: str, headers: dict[str, str]) -> float:
            start = time.perf_counter()
            await _call(client, base, headers)
            return time.perf_counter() - start

        rounds, block = (4, 10) if quick else (20, 20)
        calls = await _sequential(ways, rounds, block, timed_call)
        firsts = await _sequential(ways, rounds, block, lambda b, h: _first_byte(client, b, h))
    return {"calls": calls, "firsts": firsts, **await _throughput(ways, quick, home)}


async def _throughput(ways: dict[str, tuple[str, dict[str, str]]], quick: bool, home: Path) -> dict[str, Any]:
    """Each server's rate in THROUGHPUT_ROUNDS alternating windows (floor, gateway, LiteLLM, then again),
    so a burst of load from the rest of the machine lands on one round of each, not on one server's
    whole figure. A gateway call counts once answered and recorded: each of its windows lasts until the
    record holds every call answered in it (work deferred is not work done)."""
    seconds = (2.0 if quick else THROUGHPUT_SECONDS) / THROUGHPUT_ROUNDS
    servers = {name: way for name, way in ways.items() if name != DIRECT}
    loads = {name: Load(REQUEST, concurrency=CONCURRENCY) for name in servers}
    for name, (base, headers) in servers.items():
        await loads[name].for_seconds([(base, headers)], 1.0)  # warm: connections open, caches filled
    rates: dict[str, list[float]] = {name: [] for name in servers}
    failures = dict.fromkeys(servers, 0)
    answered = dict.fromkeys(servers, 0)
    cpu = dict.fromkeys(servers, 0.0)
    catch_up: dict[str, list[float]] = {METIS: []} if METIS in servers else {}
    for _ in range(THROUGHPUT_ROUNDS):
        for name, (base, headers) in servers.items():
            port, load = int(base.rsplit(":", 1)[1]), loads[name]
            recorded = await _settled_turns(home) if name == METIS else 0
            before = server_cpu_seconds(port)
            rate = await load.for_seconds([(base, headers)], seconds)
            if name == METIS:
                lag = await _caught_up(home, recorded + load.answered)
                catch_up[METIS].append(lag)
                rate = load.answered / (load.answered / rate + lag) if load.answered else 0.0
            cpu[name] += server_cpu_seconds(port) - before
            rates[name].append(rate)
            failures[name] += load.failed
            answered[name] += load.answered
    return {"rates": rates, "failures": failures, "catch_up": catch_up,
            "server_cpu": {name: cpu[name] / max(answered[name], 1) for name in servers}}


async def _caught_up(home: Path, turns: int) -> float:
    """Seconds from now until `turns` calls are recorded (the window's end: its backlog's drain time)."""
    start = time.perf_counter()
    while _recorded_turns(home) < turns:
        if time.perf_counter() - start > RECORD_CATCH_UP_S:
            raise RuntimeError(f"the gateway's record did not catch up within {RECORD_CATCH_UP_S:.0f} s")
        await asyncio.sleep(0.02)
    return time.perf_counter() - start


def _figures(result: dict[str, Any], missing: dict[str, str]) -> list[Figure]:
    calls, firsts, rates = result["calls"], result["firsts"], result["rates"]
    direct50, direct99 = median(calls[DIRECT]), percentile(calls[DIRECT], 0.99)
    direct_ttfb = median(firsts[DIRECT])
    figures: list[Figure] = []
    floor_added = (median(calls[FLOOR_NAME]) - direct50) * 1e3
    for name in (n for n in calls if n != DIRECT):
        added50 = (median(calls[name]) - direct50) * 1e3
        figures.append(Figure(CASE, "added latency p50 per call (ms over direct)", name, added50, "ms",
                              len(calls[name]), is_floor=name == FLOOR_NAME,
                              note=f"direct p50 {direct50 * 1e3:.2f} ms",
                              target=Target("max", floor_added + P50_TARGET_MS) if name == METIS else None))
        figures.append(Figure(CASE, "added latency p99 per call (ms over direct)", name,
                              (percentile(calls[name], 0.99) - direct99) * 1e3, "ms", len(calls[name]),
                              is_floor=name == FLOOR_NAME, note=f"direct p99 {direct99 * 1e3:.2f} ms"))
        figures.append(Figure(CASE, "added time to first byte of a stream (ms over direct)", name,
                              (median(firsts[name]) - direct_ttfb) * 1e3, "ms", len(firsts[name]),
                              is_floor=name == FLOOR_NAME, note=f"direct {direct_ttfb * 1e3:.2f} ms"))
    medians = {name: median(values) for name, values in rates.items()}
    floor_rates = rates[FLOOR_NAME]
    for name, rate in medians.items():
        failed = result.get("failures", {}).get(name, 0)
        notes = [f"median of {len(rates[name])} alternating {CONCURRENCY}-client windows"]
        if failed:
            notes.append(f"{failed} failed requests")
        if name in result.get("catch_up", {}):
            lag = median(result["catch_up"][name])
            notes.append(f"answered and recorded: the record caught up a median {lag:.2f} s after each window")
        figures.append(Figure(CASE, f"requests per second, {CONCURRENCY} concurrent clients", name, rate, "req/s",
                              len(rates[name]), floor=medians[FLOOR_NAME], is_floor=name == FLOOR_NAME,
                              higher_is_better=True, target=Target("ratio_min", 0.5) if name == METIS else None,
                              note="; ".join(notes),
                              spread=paired_spread(rates[name], floor_rates) if name != FLOOR_NAME else None))
    for name, seconds in result.get("server_cpu", {}).items():
        figures.append(Figure(CASE, f"server CPU per request, {CONCURRENCY} concurrent clients", name, seconds * 1e3,
                              "ms", 1, floor=result["server_cpu"][FLOOR_NAME] * 1e3, is_floor=name == FLOOR_NAME,
                              note=f"all threads of the server's {WORKERS} workers and supervisor, from /proc"))
    if LITELLM in rates:
        figures.append(Figure(CASE, f"requests per second vs LiteLLM proxy, {CONCURRENCY} clients", METIS,
                              medians[METIS], "req/s", len(rates[METIS]), floor=medians[LITELLM],
                              higher_is_better=True, target=Target("ratio_min", 3.0),
                              spread=paired_spread(rates[METIS], rates[LITELLM])))
    for name, why in missing.items():
        figures.append(Figure(CASE, "missing", name, 0.0, "", 0, note=why))
    return figures


def run(ctx: RunContext) -> list[Figure]:
    with _targets(ctx.server, ctx.python) as (ways, missing, home):
        result = asyncio.run(_measure(ways, ctx.quick, home))
    return _figures(result, missing)


def main() -> None:
    """`python -m bench.cases.gateway [--quick]`: this case alone, printed (no results file written)."""
    from bench.server import serve_in_process

    quick = "--quick" in sys.argv
    with serve_in_process(sys.executable) as upstream:
        figures = run(RunContext(server=upstream, quick=quick))
    for figure in figures:
        verdict = {True: "met", False: "MISSED", None: ""}[figure.passed]
        ratio = f"  ({figure.ratio:.2f}x)" if figure.ratio is not None and not figure.is_floor else ""
        print(f"{figure.row:<58} {figure.impl:<20} {figure.value:10.2f} {figure.unit:<6}{ratio} {verdict} "
              f"{figure.note}")


if __name__ == "__main__":
    main()
