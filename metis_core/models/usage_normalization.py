"""Turn each provider's token counts into the canonical Usage, exactly once, at the adapter.

Canonical rule: `input_tokens` counts only uncached, non-cache-write input; cached reads and cache
writes are separate; `output_tokens` includes reasoning. OpenAI and Gemini count cached tokens
inside their prompt total (and Gemini counts thoughts outside its output total); Anthropic
already reports the parts separately. These functions do arithmetic only: they never price.
"""

from __future__ import annotations

import logging

from metis_core.messages.metadata import MAX_TOKEN_COUNT, Usage, UsageDetails

log = logging.getLogger("metis_core.models.usage")


def normalize_openai_style(
    prompt_tokens: int,
    completion_tokens: int,
    *,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
    reasoning_tokens: int = 0,
    latency_ms: int = 0,
) -> Usage:
    """Chat Completions / Responses / OpenAI-compatible counts, where prompt includes cached tokens.

    `completion_tokens` (Responses: output_tokens) already includes reasoning tokens.
    """
    cached = max(cached_tokens, 0)
    writes = max(cache_write_tokens, 0)
    uncached = prompt_tokens - cached - writes
    if uncached < 0:
        log.warning(
            "provider reported %d cached + %d cache-write tokens out of %d prompt tokens; counting uncached input as 0",
            cached,
            writes,
            prompt_tokens,
        )
        uncached = 0
    return Usage(
        input_tokens=uncached,
        output_tokens=max(completion_tokens, 0),
        cached_input_tokens=cached,
        cache_creation_input_tokens=writes,
        reasoning_tokens=max(reasoning_tokens, 0),
        latency_ms=latency_ms,
    )


def normalize_gemini_style(
    prompt_token_count: int,
    candidates_token_count: int,
    *,
    cached_content_token_count: int = 0,
    thoughts_token_count: int = 0,
    tool_use_prompt_token_count: int = 0,
    latency_ms: int = 0,
) -> Usage:
    """Gemini usageMetadata: prompt includes cached content; thoughts are outside candidates.

    Thoughts are billed as output, so they are added to output_tokens and reported as reasoning.
    Tool-use prompt tokens (from built-in tools) are billed as input.
    """
    return normalize_openai_style(
        prompt_token_count + tool_use_prompt_token_count,
        candidates_token_count + thoughts_token_count,
        cached_tokens=cached_content_token_count,
        reasoning_tokens=thoughts_token_count,
        latency_ms=latency_ms,
    )


def normalize_anthropic_style(
    input_tokens: int,
    output_tokens: int,
    *,
    cache_read_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
    latency_ms: int = 0,
) -> Usage:
    """Anthropic counts: input_tokens already excludes cache reads and cache writes."""
    return Usage(
        input_tokens=max(input_tokens, 0),
        output_tokens=max(output_tokens, 0),
        cached_input_tokens=max(cache_read_input_tokens or 0, 0),
        cache_creation_input_tokens=max(cache_creation_input_tokens or 0, 0),
        latency_ms=latency_ms,
    )


def detail_count(mapping: object, key: str) -> int:
    """A detail count from a provider's usage object: a positive int, else 0 (absent, null, malformed)."""
    if not isinstance(mapping, dict):
        return 0
    value = mapping.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_TOKEN_COUNT else 0


def holds_counts(mapping: object) -> bool:
    """Whether `detail_count` can find a count in `mapping`: a dict with a value that is not zero, null
    or empty. Real answers send their detail objects filled with zeros; this skips reading them key by key."""
    return isinstance(mapping, dict) and any(mapping.values())


def with_details(usage: Usage, **counts: object) -> Usage:
    """`usage` with a UsageDetails of the given counts, or unchanged when every count is zero or empty."""
    if not any(counts.values()):
        return usage
    usage.details = UsageDetails.model_validate(counts)
    return usage
