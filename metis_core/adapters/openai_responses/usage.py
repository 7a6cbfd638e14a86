"""Responses API `usage` -> canonical Usage, normalized exactly once.

`input_tokens` INCLUDES `input_tokens_details.cached_tokens` (and, in newer bodies,
`cache_write_tokens`); canonical `input_tokens` excludes both. `output_tokens` already includes
`output_tokens_details.reasoning_tokens`. No pricing here (RequestContext.finish_usage prices).
"""

from __future__ import annotations

from typing import Any

from metis_core.messages import Usage
from metis_core.models.usage_normalization import normalize_openai_style


def usage_from_responses(raw: Any) -> Usage:
    """Canonical usage from a response's `usage` object; missing or null counts are 0."""
    if not isinstance(raw, dict):
        return Usage()
    input_details = raw.get("input_tokens_details")
    output_details = raw.get("output_tokens_details")
    input_details = input_details if isinstance(input_details, dict) else {}
    output_details = output_details if isinstance(output_details, dict) else {}
    return normalize_openai_style(
        _count(raw.get("input_tokens")),
        _count(raw.get("output_tokens")),
        cached_tokens=_count(input_details.get("cached_tokens")),
        cache_write_tokens=_count(input_details.get("cache_write_tokens")),
        reasoning_tokens=_count(output_details.get("reasoning_tokens")),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
