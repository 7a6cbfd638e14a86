"""Bedrock Converse usage -> canonical Usage.

Converse's `inputTokens` already excludes prompt-cache reads and writes (as Anthropic's does), so
it maps straight across; `cacheReadInputTokens` becomes `cached_input_tokens` and
`cacheWriteInputTokens` `cache_creation_input_tokens`. Streams report usage once, in the
`metadata` event after `messageStop`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metis_core.errors import MalformedResponseError
from metis_core.messages import Usage


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key) or 0
    if type(value) is not int or value < 0:
        raise MalformedResponseError(f"usage.{key} is {value!r}, not a token count", provider="bedrock")
    return value


def usage_from_wire(raw: Mapping[str, Any] | None) -> Usage:
    if not raw:
        return Usage()
    if not isinstance(raw, Mapping):
        raise MalformedResponseError(f"usage is {type(raw).__name__}, not an object", provider="bedrock")
    return Usage(
        input_tokens=_count(raw, "inputTokens"),
        output_tokens=_count(raw, "outputTokens"),
        cached_input_tokens=_count(raw, "cacheReadInputTokens"),
        cache_creation_input_tokens=_count(raw, "cacheWriteInputTokens"),
    )
