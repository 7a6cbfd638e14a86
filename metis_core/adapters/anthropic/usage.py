"""Anthropic usage -> canonical Usage.

Anthropic's `input_tokens` already excludes cache reads and cache writes, so it maps straight
across; `cache_read_input_tokens` becomes `cached_input_tokens`. Streams report usage twice
(message_start, then cumulative figures in message_delta); callers merge the raw dicts first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metis_core.messages import Usage, prechecked


def usage_from_wire(raw: Mapping[str, Any] | None) -> Usage:
    if not raw:
        return Usage()
    counts = (raw.get("input_tokens") or 0, raw.get("output_tokens") or 0, raw.get("cache_read_input_tokens") or 0,
              raw.get("cache_creation_input_tokens") or 0)
    count = prechecked.token_count
    if count(counts[0]) and count(counts[1]) and count(counts[2]) and count(counts[3]):
        return prechecked.usage(*counts)  # plain ints, as a real answer holds: nothing to validate
    return Usage(input_tokens=counts[0], output_tokens=counts[1], cached_input_tokens=counts[2],
                 cache_creation_input_tokens=counts[3])


def merge_usage(current: dict[str, Any], update: Mapping[str, Any] | None) -> dict[str, Any]:
    """Later stream figures win; a null in message_delta does not erase an earlier number."""
    if update:
        for key, value in update.items():
            if value is not None:
                current[key] = value
    return current
