"""What this adapter keeps in `metadata.provider_raw` (§6.5), and how it reads it back.

Everything sits under `provider_raw["openai_responses"]`, so no other adapter's keys collide:
the response id, status and served model; per reasoning item its `rs_` id, the thinking block it
became and the lengths of its summary parts; the canonical ids of custom (grammar) tool calls; the
client-run items (shell, apply_patch, computer) by canonical id; the model's exact argument strings
where re-serializing would change them (byte-identical replays keep prompt caches warm). Only this
adapter reads it; nothing here is needed to understand a message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from metis_core.messages import Message

PROVIDER = "openai_responses"
API = "responses"
RAW_KEY = PROVIDER
SUMMARY_SEPARATOR = "\n\n"
"""Reasoning summary parts are joined with a blank line into one thinking block's text."""


def responses_raw(message: Message) -> dict[str, Any]:
    raw = message.metadata.provider_raw
    if not raw:
        return {}
    mine = raw.get(RAW_KEY)
    return mine if isinstance(mine, dict) else {}


def join_summary(parts: list[str]) -> str:
    return SUMMARY_SEPARATOR.join(parts)


def split_summary(text: str, lengths: Any) -> list[str]:
    """The summary parts a thinking text was joined from; one part if the recorded split no longer fits."""
    if not text:
        return []
    if isinstance(lengths, list) and len(lengths) > 1 and all(isinstance(n, int) and n >= 0 for n in lengths):
        parts: list[str] = []
        position = 0
        for number, length in enumerate(lengths):
            parts.append(text[position : position + length])
            position += length
            if number < len(lengths) - 1:
                if text[position : position + len(SUMMARY_SEPARATOR)] != SUMMARY_SEPARATOR:
                    return [text]
                position += len(SUMMARY_SEPARATOR)
        if position == len(text):
            return parts
    return [text]


@dataclass(slots=True)
class RawRecord:
    """Collects the round-trip data of one response while it is parsed or streamed."""

    reasoning: list[dict[str, Any]] = field(default_factory=list)
    custom_tool_calls: list[str] = field(default_factory=list)
    client_calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Canonical id -> the client-run item it came from (client_tools.py), replayed verbatim."""
    arguments: dict[str, str] = field(default_factory=dict)
    namespaces: dict[str, str] = field(default_factory=dict)
    """canonical call id -> the `namespace` a call to a tool found by tool search was issued under."""
    callers: dict[str, dict[str, Any]] = field(default_factory=dict)
    """canonical call id -> the `caller` of a function call a program made (programmatic tool calling)."""
    text_keys: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    """(assembler text key, what its message item and part carry back); `text_parts` once built."""
    text_parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """text block ordinal (as a string) -> the `phase` of its message item and its part's `logprobs`."""
    unhandled_items: list[str] = field(default_factory=list)
    refusal: bool = False
    thinking_blocks: int = 0
    response: dict[str, Any] = field(default_factory=dict)

    def add_reasoning(self, item_id: Any, has_block: bool, part_lengths: list[int], from_content: bool = False) -> None:
        """One reasoning item; `from_content`: its text is its `reasoning_text` content, not a summary."""
        entry: dict[str, Any] = {"id": item_id if isinstance(item_id, str) else None}
        if has_block:
            entry["block"] = self.thinking_blocks
            self.thinking_blocks += 1
        if from_content:
            entry["content_parts"] = part_lengths
        elif len(part_lengths) > 1:
            entry["summary_parts"] = part_lengths
        self.reasoning.append(entry)

    def add_arguments(self, canonical_id: str, arguments: str, parsed: dict[str, Any]) -> None:
        """Keep the model's exact argument string only where compact JSON would differ from it."""
        if orjson.dumps(parsed).decode() != arguments:
            self.arguments[canonical_id] = arguments

    def add_namespace(self, canonical_id: str, item: dict[str, Any]) -> None:
        """What a call item carries besides its name and input: its tool-search `namespace`, its `caller`."""
        namespace = item.get("namespace")
        if isinstance(namespace, str) and namespace:
            self.namespaces[canonical_id] = namespace
        caller = item.get("caller")
        if isinstance(caller, dict) and caller.get("type") not in (None, "direct"):
            self.callers[canonical_id] = caller

    def add_message(self, keys: list[Any], item: dict[str, Any]) -> None:
        """What the API wants back of a message item besides its text: `phase` and `logprobs`."""
        phase = item.get("phase")
        for key, part in zip(keys, item.get("content") or (), strict=False):
            kept: dict[str, Any] = {"phase": phase} if isinstance(phase, str) and phase else {}
            if isinstance(part, dict) and part.get("logprobs"):
                kept["logprobs"] = part["logprobs"]
            if kept:
                self.text_keys.append((key, kept))

    def set_response(self, response: dict[str, Any]) -> None:
        details = response.get("incomplete_details")
        self.response = {
            "response_id": response.get("id"),
            "status": response.get("status"),
            "served_model": response.get("model"),
        }
        if isinstance(details, dict) and details.get("reason"):
            self.response["incomplete_reason"] = details["reason"]

    def as_provider_raw(self) -> dict[str, Any]:
        mine: dict[str, Any] = {k: v for k, v in self.response.items() if v is not None}
        for name in ("reasoning", "custom_tool_calls", "client_calls", "arguments", "namespaces", "callers",
                     "text_parts", "unhandled_items"):
            value = getattr(self, name)
            if value:
                mine[name] = value
        if self.refusal:
            mine["refusal"] = True
        return {RAW_KEY: mine}
