"""What this adapter keeps in `metadata.provider_raw` (§6.5), and how it reads it back.

Everything sits under `provider_raw["openai_responses"]`, so no other adapter's keys collide:
the response id, status and served model; per reasoning item its `rs_` id, the thinking block it
became and the lengths of its summary parts; the canonical ids of custom (grammar) tool calls; the
model's exact argument strings where re-serializing would change them (byte-identical replays keep
prompt caches warm). Only this adapter reads it; nothing here is needed to understand a message.
"""

from __future__ import annotations

from typing import Any

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


def same_raw_arguments(arguments: str, parsed: dict[str, Any]) -> bool:
    """True when the compact re-serialization of `parsed` is already byte-identical to `arguments`."""
    import orjson

    return orjson.dumps(parsed).decode() == arguments
