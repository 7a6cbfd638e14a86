"""Chat Completions `usage` -> canonical Usage, normalized exactly once.

OpenAI counts cached prompt tokens (and, in newer bodies, cache-write tokens) INSIDE
`prompt_tokens`; canonical `input_tokens` excludes both, so they are subtracted here and nowhere
else. Reasoning tokens stay inside `output_tokens` and are also reported on their own; audio,
accepted/rejected prediction and per-modality counts go to `Usage.details`. Cost is not
read from the body: the price table computes it (RequestContext.finish_usage).
"""

from __future__ import annotations

from typing import Any

from metis_core.messages import Usage, prechecked
from metis_core.models.usage_normalization import detail_count, with_details


def _count(mapping: dict[str, Any] | None, key: str) -> int:
    if not mapping:
        return 0
    value = mapping.get(key)
    return value if isinstance(value, int) and value > 0 else 0


def _only_zeros(details: object) -> bool:
    return details is None or (isinstance(details, dict) and not any(details.values()))


def usage_from_chat(raw: dict[str, Any] | None) -> Usage:
    """Canonical usage for one chat `usage` object (None or {} gives zeros)."""
    if not raw:
        return Usage()
    get = raw.get
    prompt_details = get("prompt_tokens_details") or None
    completion_details = get("completion_tokens_details") or None
    # The usual answer's detail objects hold only zeros: nothing in them to read key by key. (One that is
    # not an object is read, and named malformed by the reading.)
    detailed = not (_only_zeros(prompt_details) and _only_zeros(completion_details))
    cached = _count(prompt_details, "cached_tokens") if detailed else 0
    if not cached:
        cached = _count(raw, "prompt_cache_hit_tokens")  # DeepSeek's name for the same count
    cache_write = _count(prompt_details, "cache_write_tokens") if detailed else 0
    reasoning = _count(completion_details, "reasoning_tokens") if detailed else 0
    fresh, output = _count(raw, "prompt_tokens") - cached - cache_write, _count(raw, "completion_tokens")
    if fresh < 0:  # not max(): a builtin call with its argument tuple, per answer
        fresh = 0
    token_count = prechecked.token_count
    if (token_count(fresh) and token_count(output) and token_count(cached) and token_count(cache_write)
            and token_count(reasoning)):
        usage = prechecked.usage(fresh, output, cached, cache_write, reasoning)  # plain ints: nothing to validate
    else:
        usage = Usage(input_tokens=fresh, output_tokens=output, cached_input_tokens=cached,
                      cache_creation_input_tokens=cache_write, reasoning_tokens=reasoning)
    if not detailed:
        return usage
    details = (detail_count(prompt_details, "audio_tokens"), detail_count(completion_details, "audio_tokens"),
               detail_count(completion_details, "accepted_prediction_tokens"),
               detail_count(completion_details, "rejected_prediction_tokens"))
    modalities = _modalities(prompt_details, completion_details)
    if not any(details) and modalities is None:  # what with_details would find: nothing to add (the usual answer)
        return usage
    return with_details(usage, audio_input_tokens=details[0], audio_output_tokens=details[1],
                        accepted_prediction_tokens=details[2], rejected_prediction_tokens=details[3],
                        modalities=modalities)


_MODALITIES = (("text_tokens", "TEXT"), ("image_tokens", "IMAGE"), ("audio_tokens", "AUDIO"), ("video_tokens", "VIDEO"))


def _modalities(prompt: object, completion: object) -> dict[str, dict[str, int]] | None:
    """Per-modality counts (`text_tokens`, `image_tokens`, `video_tokens`, newer bodies and OpenRouter),
    under the names Gemini's modality details use; None when a body reports only audio, as older ones do."""
    found: dict[str, dict[str, int]] = {}
    for name, details in (("prompt", prompt), ("completion", completion)):
        counts = {modality: count for key, modality in _MODALITIES if (count := detail_count(details, key))}
        if counts.keys() - {"AUDIO"}:
            found[name] = counts
    return found or None
