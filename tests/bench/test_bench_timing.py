"""bench/timing.py's `interleaved` and `ainterleaved` run the same schedule: warm-up, then alternating blocks
until each action has its samples or has spent its budget, every result checked."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from bench.timing import ainterleaved, interleaved  # noqa: E402

SECONDS_PER_CALL = {"fast": 0.25, "slow": 1.0}
"""What each action costs on the fake clock, against a budget of 2.5 s per action."""
EXPECTED_ORDER = ["fast", "slow",
                  "fast", "fast", "slow", "slow",
                  "fast", "fast", "slow", "slow",
                  "fast", "fast",
                  "fast"]
"""One warm-up call each, then blocks of two (the last one shorter): "slow", under MIN_SAMPLES after its
first block, runs a whole second one and has then spent its budget; "fast" goes on to its 7 samples."""


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.calls: list[str] = []

    def __call__(self) -> float:
        return self.now

    def run(self, name: str) -> str:
        self.calls.append(name)
        self.now += SECONDS_PER_CALL[name]
        return name


def _checks() -> dict[str, Callable[[Any], None]]:
    def check_for(name: str) -> Callable[[Any], None]:
        def check(result: Any) -> None:
            assert result == name
        return check
    return {name: check_for(name) for name in SECONDS_PER_CALL}


@pytest.mark.parametrize("run_async", [False, True], ids=["interleaved", "ainterleaved"])
def test_both_interleaved_run_the_same_blocks_until_each_action_has_its_samples_or_spent_its_budget(
    monkeypatch: pytest.MonkeyPatch, run_async: bool
) -> None:
    clock = FakeClock()
    monkeypatch.setattr("bench.timing.time", SimpleNamespace(perf_counter=clock))
    sizes: dict[str, Any] = {"calls": 7, "warmup": 1, "block": 2, "budget": 2.5}
    if run_async:
        async def call(name: str) -> str:
            return clock.run(name)

        actions: dict[str, Callable[[], Awaitable[str]]] = {n: (lambda n=n: call(n)) for n in SECONDS_PER_CALL}
        samples = asyncio.run(ainterleaved(actions, _checks(), **sizes))
    else:
        samples = interleaved({n: (lambda n=n: clock.run(n)) for n in SECONDS_PER_CALL}, _checks(), **sizes)
    assert clock.calls == EXPECTED_ORDER
    assert samples == {"fast": [0.25] * 7, "slow": [1.0] * 4}
