"""The load generator of the server benchmarks: many concurrent clients posting one request, on aiohttp.

A load generator must cost far less than the servers it drives, or it sets the figure itself.
httpx's connection pool at 64 connections cost this process 3.8–6.7 ms of CPU per request
(measured on the benchmark machine, while the servers it drove spent 1.6–1.8 ms): on 2 cores the
generator, not the server, capped the rate. aiohttp's client costs ~0.15 ms. Also reads a
server process's CPU clock from /proc, so each rate comes with the server's CPU per request.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import aiohttp
import orjson

TICKS = os.sysconf("SC_CLK_TCK")


def server_pids(port: int) -> list[int]:
    """The processes holding the socket listening on `port` on this machine: a server's supervisor and
    its workers (uvicorn --workers), or the one process of a single-process server."""
    out = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    return sorted({int(part.split(",")[0]) for part in out.split("pid=")[1:]})


def server_cpu_seconds(port: int) -> float:
    """User + system CPU seconds of every process of the server listening on `port`."""
    return sum(cpu_seconds(pid) for pid in server_pids(port))


def cpu_seconds(pid: int, task: int | None = None) -> float:
    """User + system CPU seconds of a process (all its threads) or of one of its threads."""
    path = Path(f"/proc/{pid}/stat") if task is None else Path(f"/proc/{pid}/task/{task}/stat")
    fields = path.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Load:
    """`concurrency` clients posting `request` as JSON to `path` on one or more servers, round robin."""

    def __init__(self, request: Mapping[str, object], *, path: str = "/v1/messages", concurrency: int = 64,
                 expect: bytes = b'"content"') -> None:
        self.body = orjson.dumps(request)
        self.path = path
        self.concurrency = concurrency
        self.expect = expect
        self.failed = 0
        self.answered = 0

    async def _one(self, session: aiohttp.ClientSession, base: str, headers: Mapping[str, str]) -> bool:
        try:
            async with session.post(base + self.path, data=self.body,
                                    headers={"content-type": "application/json", **headers}) as answer:
                content = await answer.read()
        except (aiohttp.ClientError, TimeoutError):
            self.failed += 1  # counted; rates count answers only
            return False
        if answer.status != 200 or self.expect not in content:
            self.failed += 1
            return False
        return True

    def _session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=self.concurrency),
                                     timeout=aiohttp.ClientTimeout(total=60))

    async def for_seconds(self, targets: list[tuple[str, Mapping[str, str]]], seconds: float,
                          warm_up: int = 5) -> float:
        """Answered requests per second over `seconds`, the clients spread over `targets`."""
        async with self._session() as session:
            for base, headers in targets:
                for _ in range(warm_up):
                    await self._one(session, base, headers)
            self.failed = self.answered = 0
            stop = time.perf_counter() + seconds

            async def worker(base: str, headers: Mapping[str, str]) -> None:
                while time.perf_counter() < stop:
                    answered = await self._one(session, base, headers)
                    self.answered += answered  # after the await: `x += await ...` would read x before it

            start = time.perf_counter()
            await asyncio.gather(*(worker(*targets[i % len(targets)]) for i in range(self.concurrency)))
            return self.answered / (time.perf_counter() - start)

    async def calls(self, base: str, headers: Mapping[str, str], calls: int) -> float:
        """Send `calls` requests with the clients; the wall seconds it took."""
        left = calls
        async with self._session() as session:

            async def worker() -> None:
                nonlocal left
                while left > 0:
                    left -= 1
                    answered = await self._one(session, base, headers)
                    self.answered += answered

            self.failed = self.answered = 0
            start = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(self.concurrency)))
            return time.perf_counter() - start
