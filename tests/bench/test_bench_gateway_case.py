"""The gateway case's parts, without timing: the pass-through floor forwards bytes unchanged, and
the figures name the targets (gateway p50 within 1 ms of the floor; throughput vs floor and LiteLLM)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.cases import gateway
from bench.cases.gateway import DIRECT, FLOOR_NAME, LITELLM, REQUEST, THROUGHPUT_ROUNDS, _figures
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
        "rates": {FLOOR_NAME: [1000.0] * 4, METIS: [600.0] * 4, LITELLM: [100.0] * 4},
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


def test_throughput_windows_alternate_between_servers_and_the_figure_is_each_ones_median_round(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst of load from the rest of the machine lands on one round of each server, not on one
    server's whole figure: the windows go round robin, and a slow round moves no median."""
    order: list[str] = []
    per_round = {FLOOR_NAME: [1000.0, 400.0, 1000.0, 1000.0], METIS: [600.0, 600.0, 100.0, 600.0],
                 LITELLM: [100.0] * 4}

    async def window(self: gateway.Load, targets: list[tuple[str, dict[str, str]]], seconds: float) -> float:
        base = targets[0][0]
        if seconds == 1.0:  # the warm-up window before the rounds
            return 1.0
        order.append(base)
        rate = per_round[base.rsplit(":", 1)[0]][order.count(base) - 1]
        self.answered, self.failed = int(rate), 0
        return rate

    async def turns(home: Path) -> int:
        return 0

    async def caught_up(home: Path, turns: int) -> float:
        return 0.0

    monkeypatch.setattr(gateway.Load, "for_seconds", window)
    monkeypatch.setattr(gateway, "server_cpu_seconds", lambda port: 0.0)
    monkeypatch.setattr(gateway, "_settled_turns", turns)
    monkeypatch.setattr(gateway, "_caught_up", caught_up)
    ways: dict[str, tuple[str, dict[str, str]]] = {DIRECT: ("direct", {})}
    ways.update({name: (f"{name}:{port}", {}) for port, name in enumerate((FLOOR_NAME, METIS, LITELLM))})
    names = {base: name for name, (base, _) in ways.items()}
    result = asyncio.run(gateway._throughput(ways, False, Path("unused")))
    assert [names[base] for base in order] == [FLOOR_NAME, METIS, LITELLM] * THROUGHPUT_ROUNDS
    latencies = {name: [1e-3] * 4 for name in (DIRECT, FLOOR_NAME, METIS, LITELLM)}
    figures = {(f.row, f.impl): f for f in _figures({"calls": latencies, "firsts": latencies, **result}, {})}
    rate = figures[("requests per second, 64 concurrent clients", METIS)]
    assert rate.value == 600.0 and rate.floor == 1000.0 and rate.samples == THROUGHPUT_ROUNDS
    assert rate.spread == pytest.approx((0.475, 0.825))  # quartiles of the per-round ratios 0.6, 1.5, 0.1, 0.6
