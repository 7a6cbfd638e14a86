"""bench.async_path names the environment a figure came from: metis-core's runtime closure and the rest.

The test venv is the dev one, so the report must list what the dev extra adds (pytest, the SDKs)
and never a declared runtime dependency (httpx, pydantic, sniffio) or what they pull in (httpcore).
One short run against the local server checks every way answers and the report prints both clocks.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import pytest  # noqa: E402

from bench import async_path  # noqa: E402
from bench.server import serve_in_thread  # noqa: E402


def test_the_runtime_closure_holds_the_declared_dependencies_and_what_they_pull_in() -> None:
    closure = async_path.runtime_closure()
    assert {"metis-core", "httpx", "pydantic", "sniffio", "orjson", "httpcore", "pydantic-core"} <= closure
    assert "pytest" not in closure and "anthropic" not in closure


def test_distributions_outside_the_closure_are_named() -> None:
    foreign = async_path.foreign_distributions()
    assert "pytest" in foreign
    assert not {"httpx", "httpcore", "pydantic", "sniffio", "pip"} & set(foreign)


def test_a_short_run_reports_cpu_and_wall_per_way(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # the environment-configured client sets these two: restored after the test
    monkeypatch.setenv("METIS_ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    with serve_in_thread() as server:
        blocks = asyncio.run(async_path.run_async(server, async_path.BLOCK))
        blocks_sync = async_path.run_sync(server, async_path.BLOCK)
    ways = {"raw httpx (floor)", "metis explicit", "metis from env"}
    assert set(blocks) == {*ways, async_path.AIOHTTP_FLOOR} and set(blocks_sync) == ways  # aiohttp: async only
    for measured in (blocks, blocks_sync):
        assert all(cpu > 0 and wall > 0 for values in measured.values() for cpu, wall in values)
    async_path.report("async", blocks)
    out = capsys.readouterr().out
    assert "CPU" in out and "wall" in out and "metis from env" in out
