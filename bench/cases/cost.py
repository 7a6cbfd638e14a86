"""Cost of one response: metis-core's PriceTable.cost against LiteLLM and genai-prices (Pydantic AI).

The shared row prices the same usage (1,234 input, 567 output tokens of claude-sonnet-4-5) with
each library and checks every result is $0.012207 (3 and 15 USD per million tokens). The other
metis rows cover: a dated snapshot id, a Responses
model with reasoning tokens, Gemini's long-context tier and price_usage. Target: <= 10 µs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

from bench.context import RunContext
from bench.figures import METIS, Figure, Target
from bench.scenarios import ANTHROPIC_MODEL, WrongAnswerError
from bench.timing import median, per_call_batches
from metis_core.messages.metadata import Usage
from metis_core.models.pricing import PriceTable

TARGET = Target("max", 10.0)
INPUT, OUTPUT = 1234, 567
EXPECTED = Decimal("0.012207")


def _check(who: str, value: Any) -> None:
    if value is None or abs(Decimal(str(value)) - EXPECTED) > Decimal("1e-9"):
        raise WrongAnswerError(f"{who}: cost {value!r}, expected {EXPECTED}")


def _timed(ctx: RunContext, row: str, impl: str, action: Callable[[], Any], check: Callable[[Any], None],
           *, number: int | None = None) -> Figure:
    check(action())
    runs = per_call_batches(action, number=number or ctx.sizes.translate_number * 5, repeat=ctx.sizes.repeats)
    check(action())
    figure = Figure("cost", row, impl, median(runs) * 1e6, "µs", len(runs))
    if impl == METIS:
        figure.target = TARGET
    return figure


def _positive(who: str) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        cost = value[0] if isinstance(value, tuple) else getattr(value, "cost_usd", value)
        if not isinstance(cost, Decimal) or cost <= 0:
            raise WrongAnswerError(f"{who}: no positive Decimal cost ({value!r})")

    return check


def run(ctx: RunContext) -> list[Figure]:
    table = PriceTable.load()
    same = Usage(input_tokens=INPUT, output_tokens=OUTPUT)
    row = f"cost of one response · {ANTHROPIC_MODEL}"
    figures = [_timed(ctx, row, METIS, lambda: table.cost(same, f"anthropic:{ANTHROPIC_MODEL}")[0],
                      lambda v: _check(METIS, v))]
    for key in ("litellm", "pydantic-ai"):
        module = ctx.modules.get(key)
        if module is not None:
            name = ctx.display_name(key)
            figures.append(_timed(ctx, row, name, module.cost_action(INPUT, OUTPUT), lambda v, n=name: _check(n, v),
                                  number=ctx.sizes.translate_number))
    usage = Usage(input_tokens=1234, output_tokens=567, cached_input_tokens=8900, cache_creation_input_tokens=120,
                  reasoning_tokens=200)
    day = date(2026, 5, 8)
    cases: dict[str, Callable[[], Any]] = {
        "snapshot id, at=date": lambda: table.cost(usage, "anthropic:claude-sonnet-4-5-20250929", at=day),
        "openai_responses:gpt-5, reasoning": lambda: table.cost(usage, "openai_responses:gpt-5"),
        "gemini-2.5-pro long-context tier": lambda: table.cost(usage, "gemini:gemini-2.5-pro"),
        "price_usage (cost + model_copy)": lambda: table.price_usage(usage, "openai:gpt-4o"),
    }
    for what, action in cases.items():
        figures.append(_timed(ctx, f"cost of one response · {what}", METIS, action, _positive(what)))
    return figures
