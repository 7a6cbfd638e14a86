"""OpenRouter `reasoning_details` <-> canonical thinking blocks.

Each detail becomes a block: `reasoning.text` a ThinkingBlock (its signature kept),
`reasoning.summary` a ThinkingBlock, `reasoning.encrypted` a RedactedThinkingBlock, all with the
origin BlockOrigin("openrouter", "chat_completions", model). The detail list itself is kept
verbatim in provider_raw and is the only thing ever sent back (to the same origin only); the blocks
are what the rest of metis reads. Stream deltas of one detail (same index and type) are merged.
"""

from __future__ import annotations

from typing import Any

from metis_core.messages import BlockOrigin, ContentBlock, RedactedThinkingBlock, ThinkingBlock

DETAILS_KEY = "reasoning_details"
"""provider_raw key: the reasoning_details list exactly as OpenRouter returned it."""

_TEXT_FIELDS = {"reasoning.text": "text", "reasoning.summary": "summary", "reasoning.encrypted": "data"}


def blocks_from_details(details: list[dict[str, Any]], origin: BlockOrigin) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    for detail in details:
        kind = detail.get("type")
        if kind == "reasoning.encrypted":
            blocks.append(RedactedThinkingBlock(data=detail.get("data") or "", origin=origin))
        elif kind in ("reasoning.text", "reasoning.summary"):
            text = detail.get(_TEXT_FIELDS[kind]) or ""
            blocks.append(ThinkingBlock(text=text, signature=detail.get("signature") or None, origin=origin))
    return blocks


class DetailAccumulator:
    """Merges streamed detail fragments into the list a non-streaming response would carry."""

    def __init__(self) -> None:
        self._details: dict[tuple[Any, Any], dict[str, Any]] = {}

    def add(self, fragment: dict[str, Any]) -> None:
        key = (fragment.get("index", 0), fragment.get("type"))
        merged = self._details.get(key)
        if merged is None:
            self._details[key] = dict(fragment)
            return
        for name, value in fragment.items():
            if name in ("text", "summary", "data", "signature") and isinstance(value, str):
                merged[name] = (merged.get(name) or "") + value
            elif merged.get(name) is None:
                merged[name] = value

    def details(self) -> list[dict[str, Any]]:
        return list(self._details.values())
