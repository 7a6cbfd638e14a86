"""Timing on a noisy machine: interleaved rounds, per-call samples, medians and percentiles.

Implementations compared in one row are run in alternating blocks, so a burst of noise from the
rest of the machine lands on all of them rather than on whichever happened to run then. Each call
is timed on its own and its result checked after the clock stops, so checking costs nothing in
the figure and a wrong answer voids it. Nothing here knows what is being timed.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

Check = Callable[[Any], None]
MIN_SAMPLES = 3


def _wants_more(samples: list[float], calls: int, budget: float | None) -> bool:
    if len(samples) >= calls:
        return False
    return budget is None or len(samples) < MIN_SAMPLES or sum(samples) < budget


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def _blocks(samples: dict[str, list[float]], calls: int, block: int, budget: float | None) -> Iterator[tuple[str, int]]:
    """The schedule both `interleaved`s follow: which action runs its next block and how many calls
    it holds, in turn until every action has its samples, with garbage collected before each block."""
    while any(_wants_more(s, calls, budget) for s in samples.values()):
        for name, out in samples.items():
            if _wants_more(out, calls, budget):
                gc.collect()
                yield name, min(block, calls - len(out))


def interleaved(
    actions: Mapping[str, Callable[[], Any]],
    checks: Mapping[str, Check],
    *,
    calls: int,
    warmup: int,
    block: int,
    budget: float | None = None,
) -> dict[str, list[float]]:
    """Seconds per call for each action, `calls` samples each, run in alternating blocks.

    With `budget` (seconds), an action stops once its samples add up to that much and it has at
    least MIN_SAMPLES, so a very slow peer cannot stretch the run.
    """
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for name, action in actions.items():
        for _ in range(warmup):
            checks[name](action())
    clock = time.perf_counter
    for name, count in _blocks(samples, calls, block, budget):
        action, check, out = actions[name], checks[name], samples[name]
        for _ in range(count):
            start = clock()
            result = action()
            out.append(clock() - start)
            check(result)
    return samples


async def ainterleaved(
    actions: Mapping[str, Callable[[], Awaitable[Any]]],
    checks: Mapping[str, Check],
    *,
    calls: int,
    warmup: int,
    block: int,
    budget: float | None = None,
) -> dict[str, list[float]]:
    """`interleaved` for coroutines, all on the running event loop."""
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for name, action in actions.items():
        for _ in range(warmup):
            checks[name](await action())
    clock = time.perf_counter
    for name, count in _blocks(samples, calls, block, budget):
        action, check, out = actions[name], checks[name], samples[name]
        for _ in range(count):
            start = clock()
            result = await action()
            out.append(clock() - start)
            check(result)
    return samples


def per_call_batches(action: Callable[[], Any], *, number: int, repeat: int) -> list[float]:
    """Seconds per call, averaged over `number` calls, `repeat` times (for sub-microsecond work)."""
    out = []
    clock = time.perf_counter
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            action()
        out.append((clock() - start) / number)
    return out
