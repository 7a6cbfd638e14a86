"""Anthropic Messages SSE streams built in code, with any number of tool_use blocks in one response.

For tests that need parallel tool calls (no recording has several); framing as the API sends it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from metis_core.ids import new_ulid


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_stream(model: str, text: str, tool_uses: Sequence[tuple[str, str, dict[str, Any]]] = (),
                     *, input_tokens: int = 100, output_tokens: int = 20, stop: str | None = None) -> bytes:
    parts = [_event("message_start", {"type": "message_start", "message": {
        "id": "msg_" + new_ulid(), "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}}})]
    parts.append(_event("content_block_start", {"type": "content_block_start", "index": 0,
                                                "content_block": {"type": "text", "text": ""}}))
    parts.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "text_delta", "text": text}}))
    parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    for index, (tool_id, name, tool_input) in enumerate(tool_uses, start=1):
        parts.append(_event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": tool_id, "name": name, "input": {}}}))
        parts.append(_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps(tool_input)}}))
        parts.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    parts.append(_event("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": stop or ("tool_use" if tool_uses else "end_turn"), "stop_sequence": None},
        "usage": {"output_tokens": output_tokens}}))
    parts.append(_event("message_stop", {"type": "message_stop"}))
    return b"".join(parts)
