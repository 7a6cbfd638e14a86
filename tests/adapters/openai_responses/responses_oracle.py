"""Test-only helpers: the official SDK's request types as an oracle, and sample normalization.

The SDK (openai.types.responses) is never imported by metis_core; here it checks that every body
we build is a request OpenAI's own client would accept.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import TypeAdapter

PROVIDER = "openai_responses"

_non_streaming: TypeAdapter[Any] | None = None
_streaming: TypeAdapter[Any] | None = None


def validate_with_sdk(body: dict[str, Any]) -> None:
    """Validate against ResponseCreateParamsNonStreaming / Streaming; raises pydantic.ValidationError.

    One deliberate exception: the SDK's ResponseReasoningItemParam marks `id` Required, but echoing
    an `rs_` id under `store: false` is rejected live ("Item with id 'rs_...' not found. Items are
    not persisted when `store` is set to false", vercel/ai#7543) and OpenAI's own Codex client skips
    serializing it (codex-rs protocol/src/models.rs). We never send it, so a placeholder is added to
    a COPY for this check only; tests assert separately that the real body carries no id.
    """
    global _non_streaming, _streaming
    from openai.types.responses.response_create_params import (
        ResponseCreateParamsNonStreaming,
        ResponseCreateParamsStreaming,
    )

    if _non_streaming is None:
        _non_streaming = TypeAdapter(ResponseCreateParamsNonStreaming)
        _streaming = TypeAdapter(ResponseCreateParamsStreaming)
    checked = copy.deepcopy(body)
    if isinstance(checked.get("input"), list):
        for item in checked["input"]:
            if item.get("type") == "reasoning":
                assert "id" not in item
                item["id"] = "rs_placeholder_for_sdk_check"
    adapter = _streaming if checked.get("stream") is True else _non_streaming
    assert adapter is not None
    adapter.validate_python(checked, strict=False)


def without_item_state(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The body minus what metis never sends (item ids and status, which point at server state).

    Returns the normalized copy and the keys removed, so tests can assert what was there.
    """
    normalized = copy.deepcopy(body)
    removed: list[str] = []
    if isinstance(normalized.get("input"), list):
        for item in normalized["input"]:
            if item.get("type") in ("function_call", "reasoning", "custom_tool_call"):
                for key in ("id", "status"):
                    if key in item:
                        removed.append(f"{item['type']}.{key}")
                        del item[key]
    return normalized, removed
