"""The learning bench case on a small plan: the same sessions for every policy, and pattern routing
between the two baselines (cheaper than always-strong, more successful than always-cheap)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from bench.cases import learning  # noqa: E402


async def test_pattern_routing_sits_between_the_baselines_on_the_same_sessions() -> None:
    results = await learning.measure(20)
    strong, cheap, pattern = results["strong"], results["cheap"], results["pattern"]
    assert strong.sessions == cheap.sessions == pattern.sessions == 20
    assert cheap.cost < pattern.cost < strong.cost
    assert pattern.success_rate > cheap.success_rate


def test_plans_are_deterministic_and_follow_the_mix() -> None:
    plan = learning._plan(400, seed=7)
    assert plan == learning._plan(400, seed=7)
    simple = sum(1 for kind, _, _ in plan if kind in ("summary", "translation", "listing"))
    assert 0.7 < simple / len(plan) < 0.9
