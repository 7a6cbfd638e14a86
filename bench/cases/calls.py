"""One non-streaming call with the 40-message tool conversation: Anthropic and OpenAI wire, sync and async.

Every implementation that can make the call is timed per call, in alternating blocks, against the
local server; each answer's text, tool call and usage are checked. The figure is the median
seconds per call, shown in microseconds, and the ratio to the floor posting a prebuilt body: raw
httpx for sync calls, raw aiohttp for async ones (metis's async calls ride aiohttp; the httpx
AsyncClient row stays beside it for comparison).
"""

from __future__ import annotations

import asyncio
from typing import Any

from bench.context import RunContext
from bench.figures import AIOHTTP_FLOOR, FLOOR, Figure, Target, paired_spread, with_floor
from bench.scenarios import call_answer, check_answer
from bench.timing import ainterleaved, interleaved, median

TARGET = Target("ratio_max", 1.25)
CALL_BUDGET_S = 8.0
"""Seconds of calls per implementation and row before a slow peer stops (it keeps >= 3 samples)."""
PROVIDERS = ("anthropic", "openai")


def _checker(name: str, caller: Any) -> Any:
    expected = call_answer()

    def check(result: Any) -> None:
        check_answer(name, expected, *caller.fields(result))

    return check


def _figures(ctx: RunContext, row: str, samples: dict[str, list[float]], floor_impl: str = FLOOR) -> list[Figure]:
    floor = samples.get(floor_impl, [])
    figures = [
        Figure("call", row, name, median(values) * 1e6, "µs", len(values),
               spread=paired_spread(values, floor, ctx.sizes.block) if name != floor_impl else None)
        for name, values in samples.items()
    ]
    return with_floor(figures, TARGET, floor_impl)


def run_sync(ctx: RunContext, provider: str) -> list[Figure]:
    sizes = ctx.sizes
    keys = ctx.callers_for(provider)
    callers = {ctx.display_name(k): ctx.new_caller(k) for k in keys}
    try:
        actions = {name: (lambda c=caller: c.complete(provider)) for name, caller in callers.items()}
        checks = {name: _checker(name, caller) for name, caller in callers.items()}
        samples = interleaved(actions, checks, calls=sizes.calls, warmup=sizes.warmup, block=sizes.block,
                              budget=CALL_BUDGET_S)
    finally:
        for caller in callers.values():
            caller.close()
    return _figures(ctx, f"non-streaming call · {provider} · sync", samples)


async def _run_async(ctx: RunContext, provider: str) -> dict[str, list[float]]:
    sizes = ctx.sizes
    keys = ctx.callers_for(provider, asynchronous=True)
    callers = {ctx.display_name(k): ctx.new_caller(k) for k in keys}  # made on this loop
    try:
        actions = {name: (lambda c=caller: c.acomplete(provider)) for name, caller in callers.items()}
        checks = {name: _checker(name, caller) for name, caller in callers.items()}
        return await ainterleaved(actions, checks, calls=sizes.calls, warmup=sizes.warmup, block=sizes.block,
                              budget=CALL_BUDGET_S)
    finally:
        for caller in callers.values():
            await caller.aclose()
            caller.close()


def run_async(ctx: RunContext, provider: str) -> list[Figure]:
    samples = asyncio.run(_run_async(ctx, provider))
    return _figures(ctx, f"non-streaming call · {provider} · async", samples, AIOHTTP_FLOOR)


def run(ctx: RunContext) -> list[Figure]:
    figures: list[Figure] = []
    for provider in PROVIDERS:
        figures += run_sync(ctx, provider)
        figures += run_async(ctx, provider)
    return figures
