"""Gateway throughput: one `metis gateway` on SQLite beside two on one PostgreSQL database.

Run as `.venv/bin/python -m bench.bench_gateway_backends`. Starts the local provider server
(bench/server.py), a throwaway PostgreSQL server (tests/postgres_server.py), and the gateways as
their own processes; 64 concurrent clients send non-streaming Anthropic Messages calls for a few
seconds (split across both instances in the PostgreSQL case). Prints answered requests per second.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from pathlib import Path

from bench.cases.gateway import CONCURRENCY, REQUEST, _free_port, _issue_key, _process, _uvicorn
from bench.load import Load

SECONDS = 6.0


async def _throughput(bases: list[str], token: str) -> tuple[float, int]:
    load = Load(REQUEST, concurrency=CONCURRENCY)
    rate = await load.for_seconds([(base, {"x-api-key": token}) for base in bases], SECONDS)
    return rate, load.failed


def _gateways(stack: contextlib.ExitStack, upstream: str, location: Path | str, home: Path, count: int) -> list[str]:
    root = str(Path(__file__).resolve().parent.parent)
    bases = []
    for i in range(count):
        (home / f"gw{i}").mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONPATH": root, "METIS_HOME": str(home / f"gw{i}"),
               "METIS_ANTHROPIC_BASE_URL": upstream, "ANTHROPIC_API_KEY": "bench-upstream-key",
               "METIS_GATEWAY_WORKSPACE": str(home), "METIS_DATABASE_URL": str(location)}
        port = _free_port()
        bases.append(stack.enter_context(_process(_uvicorn("metis_core.gateway.serve:build_app", port, sys.executable),
                                                  env, f"http://127.0.0.1:{port}")))
    return bases


def main() -> None:
    from bench.server import serve_in_process

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from postgres_server import PostgresServer, find_bin_dir

    with serve_in_process(sys.executable) as upstream, tempfile.TemporaryDirectory(prefix="metis-gw-") as tmp:
        home = Path(tmp)
        with contextlib.ExitStack() as stack:
            sqlite_db = home / "metis.db"
            token = _issue_key(sqlite_db)
            bases = _gateways(stack, upstream, sqlite_db, home / "sqlite", 1)
            rate, failed = asyncio.run(_throughput(bases, token))
            print(f"sqlite    1 instance   {rate:10,.1f} requests/s  ({failed} failed)")
        bin_dir = find_bin_dir()
        if bin_dir is None:
            print("postgres  skipped: no PostgreSQL binaries (apt-get install postgresql)")
            return
        server = PostgresServer(bin_dir)
        server.start()
        try:
            url = server.fresh_database_url()
            token = _issue_key(url)
            with contextlib.ExitStack() as stack:
                bases = _gateways(stack, upstream, url, home / "postgres", 2)
                rate, failed = asyncio.run(_throughput(bases, token))
                print(f"postgres  2 instances  {rate:10,.1f} requests/s  ({failed} failed)")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
