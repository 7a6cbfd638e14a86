"""Anthropic usage -> canonical Usage.

Anthropic's `input_tokens` already excludes cache reads and cache writes, so it maps straight
across; `cache_read_input_tokens` becomes `cached_input_tokens`. The one-hour part of the cache
writes (`cache_creation.ephemeral_1h_input_tokens`) and `server_tool_use` request counts go to
`Usage.details`; `output_tokens_details.thinking_tokens` (inside `output_tokens`) is
`reasoning_tokens`; `iterations` of a compaction or an advisor are calls billed
beside the top-level counts, kept as `Usage.details.extra_calls` and priced by the price table.
Streams report usage twice
(message_start, then cumulative figures in message_delta); callers merge the raw dicts first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metis_core.messages import ExtraCallUsage, Usage, prechecked
from metis_core.messages.prechecked import token_count
from metis_core.models.usage_normalization import detail_count, holds_counts, with_details


def usage_from_wire(raw: Mapping[str, Any] | None) -> Usage:
    if not raw:
        return Usage()
    fresh = raw.get("input_tokens") or 0
    output = raw.get("output_tokens") or 0
    read = raw.get("cache_read_input_tokens") or 0
    written = raw.get("cache_creation_input_tokens") or 0
    if token_count(fresh) and token_count(output) and token_count(read) and token_count(written):
        # plain ints, as a real answer holds: nothing to validate
        usage = prechecked.usage(fresh, output, read, written)
    else:
        usage = Usage(input_tokens=fresh, output_tokens=output, cached_input_tokens=read,
                      cache_creation_input_tokens=written)
    thinking = detail_count(raw.get("output_tokens_details"), "thinking_tokens")
    if thinking:
        usage.reasoning_tokens = min(thinking, usage.output_tokens)
    by_ttl, server_tools, iterations = raw.get("cache_creation"), raw.get("server_tool_use"), raw.get("iterations")
    if not iterations and not holds_counts(by_ttl) and not holds_counts(server_tools):
        return usage  # the usual answer: a cache_creation of zeros, no server tools
    return with_details(usage, cache_write_1h_tokens=min(detail_count(by_ttl, "ephemeral_1h_input_tokens"),
                                                         usage.cache_creation_input_tokens),
                        web_search_requests=detail_count(server_tools, "web_search_requests"),
                        web_fetch_requests=detail_count(server_tools, "web_fetch_requests"),
                        extra_calls=_extra_calls(iterations))


BILLED_BESIDE = frozenset({"compaction", "advisor_message"})
"""Iteration types the top-level counts leave out (they add up the `message` iterations only); other
types (a model fallback's `fallback_message`, which the top level reports) are not added again."""


def _extra_calls(iterations: object) -> list[ExtraCallUsage] | None:
    """The iterations billed beside the top-level counts: compaction, and the advisor's (its own model)."""
    if not isinstance(iterations, list):
        return None
    calls = [ExtraCallUsage(kind=str(item.get("type")), model=item.get("model") if isinstance(item.get("model"), str)
                            else None,
                            input_tokens=detail_count(item, "input_tokens"),
                            output_tokens=detail_count(item, "output_tokens"),
                            cached_input_tokens=detail_count(item, "cache_read_input_tokens"),
                            cache_creation_input_tokens=detail_count(item, "cache_creation_input_tokens"),
                            cache_write_1h_tokens=detail_count(item.get("cache_creation"), "ephemeral_1h_input_tokens"))
             for item in iterations if isinstance(item, dict) and item.get("type") in BILLED_BESIDE]
    return calls or None


def merge_usage(current: dict[str, Any], update: Mapping[str, Any] | None) -> dict[str, Any]:
    """Later stream figures win; a null in message_delta does not erase an earlier number."""
    if update:
        for key, value in update.items():
            if value is not None:
                current[key] = value
    return current
