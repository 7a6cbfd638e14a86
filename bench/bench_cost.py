"""Measure how long costing one call takes (target: <= 10 microseconds per call).

Run: .venv/bin/python bench/bench_cost.py. Prints microseconds per `PriceTable.cost` call for a
cached model lookup, a dated lookup, a snapshot id folded by the registry, and `price_usage`.
"""

from __future__ import annotations

import timeit
from datetime import date

from metis_core.messages.metadata import Usage
from metis_core.models.pricing import PriceTable

NUMBER = 100_000
TARGET_US = 10.0


def per_call_us(statement: object) -> float:
    best = min(timeit.repeat(statement, number=NUMBER, repeat=5))  # type: ignore[arg-type]
    return best / NUMBER * 1e6


def main() -> None:
    table = PriceTable.load()
    usage = Usage(
        input_tokens=1234,
        output_tokens=567,
        cached_input_tokens=8900,
        cache_creation_input_tokens=120,
        reasoning_tokens=200,
    )
    day = date(2026, 5, 8)
    cases = {
        "cost(anthropic:claude-sonnet-4-6)": lambda: table.cost(usage, "anthropic:claude-sonnet-4-6"),
        "cost(snapshot id, at=date)": lambda: table.cost(usage, "anthropic:claude-sonnet-4-5-20250929", at=day),
        "cost(openai_responses:gpt-5)": lambda: table.cost(usage, "openai_responses:gpt-5"),
        "cost(gemini long-context tier)": lambda: table.cost(usage, "gemini:gemini-2.5-pro"),
        "price_usage (cost + model_copy)": lambda: table.price_usage(usage, "openai:gpt-4o"),
    }
    for name, statement in cases.items():
        figure = per_call_us(statement)
        print(f"{name:<36} {figure:6.2f} µs/call")
    cost_only = max(per_call_us(s) for n, s in cases.items() if n.startswith("cost"))
    verdict = "OK" if cost_only <= TARGET_US else "TOO SLOW"
    print(f"worst cost() figure {cost_only:.2f} µs (target <= {TARGET_US:.0f} µs): {verdict}")


if __name__ == "__main__":
    main()
