"""The async client path on its own: ModelClient.acomplete beside raw httpx posting a prebuilt body.

An independent check of the suite's call figures, measured the way a loaded machine allows: process
CPU time per call (the local server runs in its own process, so only the caller's work counts), in
alternating blocks, medians; wall time beside it. Two ways to configure the client: explicit
`base_urls`/`api_keys` (as the suite does) and from the environment (as the gateway does). Only the
public API is used. `--lean` runs it in bench/.venv-lean, a virtualenv holding metis-core and its
declared runtime dependencies only (built on first use), as a user's install would; the report
names every installed distribution outside that set. Target: metis at most 1.25x the floor by CPU
time, async and sync. Async also shows raw aiohttp (what metis's own async client rides) and metis's
own work over it. Run: `python -m bench.async_path [--calls N] [--lean]`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import orjson

from bench.peers.floor import PATHS, headers_for, prebuilt_body
from bench.peers.metis import base_urls, canonical_conversation, canonical_tools, make_client, options_for
from bench.server import serve_in_process
from metis_core.adapters._common.tool_ids import ToolIdMap  # both public: `from metis_core import ...`
from metis_core.adapters.client import ModelClient
from metis_core.transport.retry import RetryPolicy

TARGET = 1.25
AIOHTTP_FLOOR = "raw aiohttp"
"""The same post on aiohttp, which metis's own async client uses: metis's own work shows over it."""
PROVIDER = "anthropic"
BLOCK = 50
REPO = Path(__file__).resolve().parent.parent
LEAN_VENV = REPO / "bench" / ".venv-lean"
LEAN_PYTHON = LEAN_VENV / "bin" / "python"


def lean_python() -> Path:
    """bench/.venv-lean's interpreter, built (`pip install -e .`, no extras) when missing or when
    pyproject.toml changed since (a stamp holds its hash), so the venv holds today's dependencies."""
    stamp, wanted = LEAN_VENV / ".pyproject-hash", hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()
    if not LEAN_PYTHON.exists():
        subprocess.run([sys.executable, "-m", "venv", str(LEAN_VENV)], check=True)
    if not stamp.exists() or stamp.read_text() != wanted:
        subprocess.run([str(LEAN_PYTHON), "-m", "pip", "install", "--quiet", "-e", str(REPO)], check=True)
        stamp.write_text(wanted)
    return LEAN_PYTHON


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def runtime_closure(root: str = "metis-core") -> set[str]:
    """metis-core and everything its declared runtime dependencies pull in (extras left out)."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo.extend(_name(r) for r in requires if "extra ==" not in r)
    return seen


def foreign_distributions() -> list[str]:
    """Installed distributions outside metis-core's runtime closure (pip and setuptools aside)."""
    closure = runtime_closure() | {"pip", "setuptools", "wheel"}
    installed = {_name(d.metadata["Name"]) for d in importlib.metadata.distributions()}
    return sorted(installed - closure)


def env_client(server: str) -> ModelClient:
    """A client configured as the gateway's is: nothing explicit, everything from the environment."""
    os.environ["METIS_ANTHROPIC_BASE_URL"] = base_urls(server)[PROVIDER]
    os.environ["ANTHROPIC_API_KEY"] = "sk-bench-not-a-real-key"
    return ModelClient(retry=RetryPolicy(max_retries=0))


Blocks = dict[str, list[tuple[float, float]]]
"""way -> (CPU seconds per call, wall seconds per call) of each block."""


def per_call(blocks: Blocks, name: str, start: tuple[float, float], calls: int) -> None:
    cpu, wall = time.process_time() - start[0], time.perf_counter() - start[1]
    blocks.setdefault(name, []).append((cpu / calls, wall / calls))


def clocks() -> tuple[float, float]:
    return time.process_time(), time.perf_counter()


async def run_async(server: str, calls: int) -> Blocks:
    body, url = prebuilt_body(PROVIDER, stream=False), base_urls(server)[PROVIDER] + PATHS[PROVIDER]
    headers = headers_for(PROVIDER)
    messages, tools, options = canonical_conversation(), canonical_tools(), options_for(PROVIDER)
    raw = httpx.AsyncClient()
    raw_aiohttp = aiohttp.ClientSession()
    explicit, from_env = make_client(server), env_client(server)

    async def floor() -> object:
        response = await raw.post(url, content=body, headers=headers)
        return orjson.loads(response.content)

    async def aiohttp_floor() -> object:
        async with raw_aiohttp.post(url, data=body, headers=headers) as response:
            return orjson.loads(await response.read())

    def metis(client: ModelClient) -> Callable[[], Awaitable[object]]:
        async def call() -> object:
            return await client.acomplete(messages, tools=tools, options=options, tool_ids=ToolIdMap())

        return call

    ways = {"raw httpx (floor)": floor, AIOHTTP_FLOOR: aiohttp_floor, "metis explicit": metis(explicit),
            "metis from env": metis(from_env)}
    blocks: Blocks = {}
    for way in ways.values():  # warm up: connections open, adapters built, caches filled
        for _ in range(20):
            await way()
    for _ in range(max(1, calls // BLOCK)):
        for name, way in ways.items():
            start = clocks()
            for _ in range(BLOCK):
                await way()
            per_call(blocks, name, start, BLOCK)
    await raw.aclose()
    await raw_aiohttp.close()
    await explicit.aclose()
    await from_env.aclose()
    return blocks


def run_sync(server: str, calls: int) -> Blocks:
    body, url = prebuilt_body(PROVIDER, stream=False), base_urls(server)[PROVIDER] + PATHS[PROVIDER]
    headers = headers_for(PROVIDER)
    messages, tools, options = canonical_conversation(), canonical_tools(), options_for(PROVIDER)
    raw = httpx.Client()
    explicit, from_env = make_client(server), env_client(server)

    def floor() -> object:
        return orjson.loads(raw.post(url, content=body, headers=headers).content)

    def metis(client: ModelClient) -> Callable[[], object]:
        return lambda: client.complete(messages, tools=tools, options=options, tool_ids=ToolIdMap())

    ways: dict[str, Callable[[], Any]] = {"raw httpx (floor)": floor, "metis explicit": metis(explicit),
                                          "metis from env": metis(from_env)}
    blocks: Blocks = {}
    for way in ways.values():
        for _ in range(20):
            way()
    for _ in range(max(1, calls // BLOCK)):
        for name, way in ways.items():
            start = clocks()
            for _ in range(BLOCK):
                way()
            per_call(blocks, name, start, BLOCK)
    raw.close()
    explicit.close()
    from_env.close()
    return blocks


def report(title: str, blocks: Blocks) -> bool:
    floor_name = "raw httpx (floor)"
    floor_cpu = statistics.median(c for c, _ in blocks[floor_name])
    floor_wall = statistics.median(w for _, w in blocks[floor_name])
    print(f"{title}: per call, median of {len(blocks[floor_name])} blocks of {BLOCK} "
          "(CPU decides the target; wall, as the suite times it, for comparison)")
    met = True
    for name, values in blocks.items():
        cpu, wall = statistics.median(c for c, _ in values), statistics.median(w for _, w in values)
        ratio = cpu / floor_cpu
        is_floor = name == floor_name
        judged = not is_floor and name != AIOHTTP_FLOOR
        mark = "" if not judged else ("  ok" if ratio <= TARGET else f"  over {TARGET}x")
        met &= not judged or ratio <= TARGET
        print(f"  {name:<20} CPU {cpu * 1e6:6.0f} µs {ratio:5.2f}x{mark:<12} wall {wall * 1e6:6.0f} µs "
              f"{wall / floor_wall:5.2f}x")
    if AIOHTTP_FLOOR in blocks:  # like for like: metis's async calls ride aiohttp (docs/transport.md)
        own = statistics.median(c for c, _ in blocks[AIOHTTP_FLOOR])
        for name in (n for n in blocks if n.startswith("metis")):
            cpu = statistics.median(c for c, _ in blocks[name])
            print(f"  {name:<20} over raw aiohttp: {(cpu - own) * 1e6:4.0f} µs of its own, {cpu / own:4.2f}x")
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per way and mode (default 1000)")
    parser.add_argument("--lean", action="store_true",
                        help="run in bench/.venv-lean (metis-core and its runtime dependencies only)")
    args = parser.parse_args()
    if args.lean and Path(sys.prefix).resolve() != LEAN_VENV.resolve():
        python = lean_python()
        os.execv(python, [str(python), "-m", "bench.async_path", "--calls", str(args.calls)])
    sniffio = importlib.util.find_spec("sniffio") is not None
    trio = importlib.util.find_spec("trio") is not None
    foreign = foreign_distributions()
    print(f"python {sys.version.split()[0]} ({sys.prefix}), httpx {httpx.__version__}, sniffio installed: "
          f"{sniffio}, trio installed: {trio}, load average {os.getloadavg()[0]:.2f}")
    print(f"distributions beyond metis-core's runtime dependencies: {', '.join(foreign) if foreign else 'none'}")
    with serve_in_process(sys.executable) as server:
        met = report("async", asyncio.run(run_async(server, args.calls)))
        met &= report("sync", run_sync(server, args.calls))
    print("target met" if met else f"target missed: metis over {TARGET}x the floor")


if __name__ == "__main__":
    main()
