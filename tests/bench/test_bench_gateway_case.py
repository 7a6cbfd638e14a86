"""The gateway case's parts, without timing: the pass-through floor forwards bytes unchanged, and
the figures name the targets (gateway p50 within 1 ms of the floor; throughput vs floor and LiteLLM)."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.cases.gateway import DIRECT, FLOOR_NAME, LITELLM, REQUEST, _figures
from bench.figures import METIS
from bench.server import serve_in_thread


async def test_the_floor_forwards_the_upstreams_bytes_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.gateway_floor import build_app

    with serve_in_thread() as upstream:
        direct = httpx.post(upstream + "/v1/messages", json=REQUEST).content
        monkeypatch.setenv("BENCH_UPSTREAM", upstream)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(build_app()), base_url="http://floor") as client:
            answer = await client.post("/v1/messages", json=REQUEST)
    assert answer.status_code == 200 and answer.content == direct


def test_figures_hold_the_gateway_to_the_floor_and_litellm() -> None:
    ms = 1e-3
    result = {
        "calls": {DIRECT: [1 * ms] * 10, FLOOR_NAME: [2 * ms] * 10, METIS: [2.5 * ms] * 10, LITELLM: [9 * ms] * 10},
        "firsts": {DIRECT: [1 * ms] * 10, FLOOR_NAME: [2 * ms] * 10, METIS: [2 * ms] * 10, LITELLM: [5 * ms] * 10},
        "rates": {FLOOR_NAME: 1000.0, METIS: 600.0, LITELLM: 100.0},
    }
    figures = {(f.row, f.impl): f for f in _figures(result, {})}
    p50 = figures[("added latency p50 per call (ms over direct)", METIS)]
    assert p50.value == pytest.approx(1.5) and p50.passed is True  # 0.5 ms over the floor's 1 ms
    rate = figures[("requests per second, 64 concurrent clients", METIS)]
    assert rate.ratio == pytest.approx(0.6) and rate.passed is True
    assert figures[("requests per second vs LiteLLM proxy, 64 clients", METIS)].passed is True
    result["calls"][METIS] = [3.5 * ms] * 10
    assert {(f.row, f.impl): f for f in _figures(result, {})}[
        ("added latency p50 per call (ms over direct)", METIS)].passed is False
