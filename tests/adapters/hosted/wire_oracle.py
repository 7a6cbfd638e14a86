"""Reference accumulators for recorded streams, written from the providers' documented event rules.

They build, from a recorded stream alone, the message body a non-streaming call would have
returned, so a test can check the adapter's streamed parse against the recording itself: the
streamed message re-sent must reproduce it, and its non-streaming parse must agree.
"""

from __future__ import annotations

import json
from typing import Any

from metis_core.transport.framing import decode_all


def anthropic_message(body: bytes) -> dict[str, Any]:
    """The Messages API body a recorded SSE stream adds up to (content_block events applied)."""
    message: dict[str, Any] = {}
    leading: list[dict[str, Any]] = []
    blocks: dict[int, dict[str, Any]] = {}
    fragments: dict[int, str] = {}
    for chunk in decode_all(body, "sse"):
        data = json.loads(chunk.data)
        kind = data["type"]
        if kind == "message_start":
            message = dict(data["message"])
            leading = list(message.get("content") or [])
        elif kind == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"])
        elif kind == "content_block_delta":
            block, delta = blocks[data["index"]], data["delta"]
            step = delta["type"]
            if step == "text_delta":
                block["text"] += delta["text"]
            elif step == "input_json_delta":
                fragments[data["index"]] = fragments.get(data["index"], "") + delta["partial_json"]
            elif step == "citations_delta":
                block["citations"] = [*(block.get("citations") or []), delta["citation"]]
            elif step == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif step == "signature_delta":
                block["signature"] = delta["signature"]
            elif step == "compaction_delta":
                block["content"] = (block.get("content") or "") + delta["content"]
        elif kind == "message_delta":
            message.update({k: v for k, v in data["delta"].items() if v is not None})
    for index, text in fragments.items():
        if text.strip():
            try:
                blocks[index]["input"] = json.loads(text)
            except json.JSONDecodeError:  # cut off by max_tokens: no input object was ever sent
                blocks[index]["partial_json"] = text
    message["content"] = leading + [blocks[i] for i in sorted(blocks)]
    return message


def responses_completed(body: bytes) -> dict[str, Any]:
    """The response object a recorded Responses stream's terminal event carries."""
    for chunk in decode_all(body, "sse"):
        if chunk.data and chunk.data != "[DONE]":
            data = json.loads(chunk.data)
            if data.get("type") in ("response.completed", "response.incomplete"):
                response: dict[str, Any] = data["response"]
                return response
    raise AssertionError("the recording has no terminal response event")


def normalized_anthropic_content(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Equivalent spellings only: empty text (never sent) left out, `citations: null|[]` = absent,
    a `direct` caller (the default, echoed only by streams) = absent."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        block = dict(block)
        if block["type"] == "text":
            if not block["text"]:
                continue
            if not block.get("citations"):
                block.pop("citations", None)
        if block["type"] == "tool_use" and block.get("caller") == {"type": "direct"}:
            del block["caller"]
        out.append(block)
    return out


def wire_tool_calls(provider: str, body: dict[str, Any]) -> int:
    """How many tool calls of any kind a request body carries, in a target's own wire shape."""
    if provider in ("openai", "openrouter", "openai_compatible", "ollama"):
        return sum(len(m.get("tool_calls") or ()) for m in body["messages"])
    if provider == "gemini":
        return sum(1 for c in body["contents"] for p in c["parts"] if "functionCall" in p)
    if provider == "openai_responses":
        items = body["input"] if isinstance(body["input"], list) else []
        kinds = [str(i.get("type", "")) for i in items]
        return sum(1 for k in kinds if k.endswith("_call") or k == "mcp_approval_request")
    if provider == "anthropic":
        return sum(
            1
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] in ("tool_use", "server_tool_use", "mcp_tool_use")
        )
    raise AssertionError(provider)
