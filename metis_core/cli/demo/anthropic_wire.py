"""Anthropic Messages API bodies generated in code: the SSE stream and the error object.

Framing follows the API: `event:` + `data:` lines, a blank line after each event, message_start
with usage, content blocks (text deltas, tool_use with input_json_delta fragments), a ping,
message_delta with the stop reason and output usage, message_stop. No fixture is read.
"""

from __future__ import annotations

import json
from typing import Any

from metis_core.ids import new_ulid

FRAGMENT_CHARS = 12
"""Tool input arrives in pieces this long, split at arbitrary points as the API does."""


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def new_tool_use_id() -> str:
    return "toolu_01" + new_ulid()[-22:]


def message_stream(
    model: str,
    *,
    text: str,
    input_tokens: int,
    tool_use: tuple[str, str, dict[str, Any]] | None = None,
) -> bytes:
    """One streamed assistant message: `text`, then optionally a tool_use (id, name, input)."""
    words = text.split(" ")
    output_tokens = max(1, len(text) // 4) + (12 if tool_use else 0)
    parts = [
        _event("message_start", {"type": "message_start", "message": {
            "id": "msg_01" + new_ulid()[-22:], "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1, "service_tier": "standard"},
        }}),
        _event("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}}),
        b'event: ping\ndata: {"type": "ping"}\n\n',
    ]
    for i, word in enumerate(words):
        piece = word if i == 0 else " " + word
        parts.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                     "delta": {"type": "text_delta", "text": piece}}))
    parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if tool_use is not None:
        tool_id, name, tool_input = tool_use
        parts.append(_event("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": tool_id, "name": name, "input": {}}}))
        for fragment in ["", *_chunks(json.dumps(tool_input), FRAGMENT_CHARS)]:
            parts.append(_event("content_block_delta", {"type": "content_block_delta", "index": 1,
                                                         "delta": {"type": "input_json_delta",
                                                                   "partial_json": fragment}}))
        parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": 1}))
    parts.append(_event("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use" if tool_use else "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }))
    parts.append(_event("message_stop", {"type": "message_stop"}))
    return b"".join(parts)


def error_body(message: str, error_type: str = "invalid_request_error") -> bytes:
    return json.dumps({"type": "error", "error": {"type": error_type, "message": message},
                       "request_id": "req_01" + new_ulid()[-22:]}).encode()
