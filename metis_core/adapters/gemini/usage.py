"""Gemini `usageMetadata` -> canonical Usage, and `finishReason` -> canonical stop reason.

`promptTokenCount` includes `cachedContentTokenCount`, so input is prompt minus cached (plus
`toolUsePromptTokenCount`, billed as input). `candidatesTokenCount` excludes thoughts, so output is
candidates plus `thoughtsTokenCount`, which is also reported as reasoning. The tool-use prompt count
and the per-modality breakdowns (`promptTokensDetails` ...) go to `Usage.details`. Arithmetic lives in
models/usage_normalization.py; this module only reads Gemini's field names. It never prices.
"""

from __future__ import annotations

from typing import Any

from metis_core.messages import Usage
from metis_core.models.usage_normalization import normalize_gemini_style, with_details

MODALITY_DETAILS = {"prompt": "promptTokensDetails", "candidates": "candidatesTokensDetails",
                    "cache": "cacheTokensDetails", "tool_use_prompt": "toolUsePromptTokensDetails"}
"""UsageDetails.modalities key -> the usageMetadata list of {modality, tokenCount} it is read from."""


def _count(meta: dict[str, Any], name: str) -> int:
    value = meta.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_from_gemini(meta: dict[str, Any]) -> Usage:
    usage = normalize_gemini_style(
        _count(meta, "promptTokenCount"),
        _count(meta, "candidatesTokenCount"),
        cached_content_token_count=_count(meta, "cachedContentTokenCount"),
        thoughts_token_count=_count(meta, "thoughtsTokenCount"),
        tool_use_prompt_token_count=_count(meta, "toolUsePromptTokenCount"),
    )
    return with_details(usage, tool_use_prompt_tokens=_count(meta, "toolUsePromptTokenCount"),
                        modalities=_modalities(meta))


def _modalities(meta: dict[str, Any]) -> dict[str, dict[str, int]] | None:
    found: dict[str, dict[str, int]] = {}
    for name, field in MODALITY_DETAILS.items():
        entries = meta.get(field)
        counts = {entry["modality"]: _count(entry, "tokenCount") for entry in entries or ()
                  if isinstance(entry, dict) and isinstance(entry.get("modality"), str)}
        if counts:
            found[name] = counts
    return found or None


REFUSAL_REASONS = frozenset(
    {"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "LANGUAGE", "IMAGE_SAFETY",
     "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "IMAGE_OTHER", "NO_IMAGE"}
)
"""Output withheld or cut by a filter: the caller sees a refusal and may fall back to another model."""

FAILED_CALL_REASONS = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"})
"""The model tried to call a tool and failed: the turn is not usable as it stands."""


def stop_reason_for(finish_reason: str | None, *, has_tool_calls: bool) -> str:
    """STOP covers both a natural end and a stop sequence (Gemini does not tell them apart)."""
    if finish_reason == "MAX_TOKENS":
        return "max_tokens"
    if finish_reason in REFUSAL_REASONS:
        return "refusal"
    if finish_reason in FAILED_CALL_REASONS:
        return "error"
    return "tool_use" if has_tool_calls else "end_turn"
