"""Consuming a 2,000-event stream into canonical events and a final message, per provider wire.

The stream is text fragments, then one tool call whose JSON arrives in 200 pieces (Gemini and
Ollama send calls whole), then usage. Each implementation reads it to its own final message, which
is checked (text, tool arguments, usage). The figure is wire events per second (2,000 / median
seconds per stream); the floor is raw httpx with a minimal SSE parse and one JSON parse per event.
"""

from __future__ import annotations

from typing import Any

from bench.context import RunContext
from bench.figures import Figure, Target, with_floor
from bench.scenarios import STREAM_EVENTS, check_answer, stream_script
from bench.timing import interleaved, median

TARGET = Target("ratio_min", 0.85)
STREAM_BUDGET_S = 12.0
"""Seconds of streaming per implementation and provider before a slow one stops (>= 3 streams)."""
PROVIDERS = ("anthropic", "openai", "openai_responses", "gemini", "ollama", "openrouter")


def _checker(name: str, caller: Any) -> Any:
    expected = stream_script().answer

    def check(result: Any) -> None:
        final, events = result
        if events <= 0:
            raise AssertionError(f"{name}: the stream produced no events")
        check_answer(name, expected, *caller.fields(final))

    return check


def run_provider(ctx: RunContext, provider: str) -> list[Figure]:
    sizes = ctx.sizes
    keys = ctx.callers_for(provider, streaming=True)
    callers = {ctx.display_name(k): ctx.new_caller(k) for k in keys}
    try:
        actions = {name: (lambda c=caller: c.stream(provider)) for name, caller in callers.items()}
        checks = {name: _checker(name, caller) for name, caller in callers.items()}
        samples = interleaved(actions, checks, calls=sizes.streams, warmup=1, block=1, budget=STREAM_BUDGET_S)
    finally:
        for caller in callers.values():
            caller.close()
    row = f"stream of {STREAM_EVENTS:,} events · {provider}"
    figures = [
        Figure("stream", row, name, STREAM_EVENTS / median(values), "events/s", len(values), higher_is_better=True)
        for name, values in samples.items()
    ]
    return with_floor(figures, TARGET)


def run(ctx: RunContext) -> list[Figure]:
    figures: list[Figure] = []
    for provider in PROVIDERS:
        figures += run_provider(ctx, provider)
    return figures
