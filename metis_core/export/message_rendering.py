"""Canonical message content as the export formats want it, used only when content is asked for.

Two renderings: flat text (the event log's `content` strings, tool results) and the OTel GenAI
message parts (`{"role", "parts": [...]}`, semantic conventions 1.37+). Image bytes are never
copied (a part names the media type only) and signed or redacted reasoning is left out.
"""

from __future__ import annotations

from typing import Any

import orjson

from metis_core.messages import (
    CompactionBlock,
    ContentBlock,
    ImageBlock,
    Message,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
"""Canonical stop reasons to the OpenAI-style finish reasons both OTel and event log v0.2 use."""


def finish_reason(stop_reason: str | None) -> str:
    """`stop` for anything without a closer equivalent (error, cancelled, unknown)."""
    return FINISH_REASONS.get(stop_reason or "", "stop")


def compact_json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _image_label(block: ImageBlock) -> str:
    return f"[image {block.media_type}]"


def tool_result_text(block: ToolResultBlock) -> str:
    """A tool result's text blocks joined (images named, not copied)."""
    return "".join(b.text if isinstance(b, TextBlock) else _image_label(b) for b in block.content)


def _block_text(block: ContentBlock) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return f"[tool_use {block.name} {block.id}] {compact_json(block.input)}"
    if isinstance(block, ToolResultBlock):
        return tool_result_text(block)
    if isinstance(block, ImageBlock):
        return _image_label(block)
    if isinstance(block, ProviderToolCallBlock | ProviderToolResultBlock | CompactionBlock):
        return block.text  # the provider's own work, as its text rendering
    return ""  # reasoning is not conversation content


def message_text(message: Message) -> str:
    """What the message said, flattened: text, tool calls as one line each, results, image labels."""
    return "\n".join(text for text in (_block_text(b) for b in message.content) if text)


def _otel_part(block: ContentBlock) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        return {"type": "text", "content": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.input}
    if isinstance(block, ToolResultBlock):
        return {"type": "tool_call_response", "id": block.tool_use_id, "response": tool_result_text(block)}
    if isinstance(block, ThinkingBlock):
        return {"type": "reasoning", "content": block.text}
    if isinstance(block, ImageBlock):
        return {"type": "blob", "modality": "image", "mime_type": block.media_type}
    if isinstance(block, ProviderToolCallBlock):
        return {"type": "server_tool_call", "id": block.id, "name": block.name, "arguments": block.input}
    if isinstance(block, ProviderToolResultBlock):
        return {"type": "server_tool_call_response", "id": block.tool_use_id, "response": block.text}
    return None


def otel_message(message: Message, *, with_finish_reason: bool = False) -> dict[str, Any]:
    """One message in the GenAI input/output message shape (role + parts)."""
    parts = [part for part in (_otel_part(b) for b in message.content) if part is not None]
    rendered: dict[str, Any] = {"role": message.role.value, "parts": parts}
    if with_finish_reason:
        rendered["finish_reason"] = finish_reason(message.metadata.stop_reason)
    return rendered
