"""The usage of one gateway answer made of several upstream calls: their counts and prices added.

A structured ask's corrective retries and a paused answer's continuations each cost a call; the
answer written back to the client reports what all of them used. Each call is charged on its own
as it ends (quotas.py); this sum is only what the answer and its turn record say.
"""

from __future__ import annotations

from decimal import Decimal

from metis_core.messages import Usage


def add_usage(total: Usage | None, usage: Usage | None) -> Usage | None:
    """`total` plus `usage` (either may be None: a call that reported none adds nothing)."""
    if usage is None:
        return total
    if total is None:
        return usage.model_copy()
    cost = None if total.cost_usd is None and usage.cost_usd is None \
        else (total.cost_usd or Decimal(0)) + (usage.cost_usd or Decimal(0))
    return Usage(
        input_tokens=total.input_tokens + usage.input_tokens, output_tokens=total.output_tokens + usage.output_tokens,
        cached_input_tokens=total.cached_input_tokens + usage.cached_input_tokens,
        cache_creation_input_tokens=total.cache_creation_input_tokens + usage.cache_creation_input_tokens,
        reasoning_tokens=total.reasoning_tokens + usage.reasoning_tokens, cost_usd=cost,
        pricing_version=usage.pricing_version or total.pricing_version, latency_ms=total.latency_ms + usage.latency_ms,
    )  # fmt: skip
