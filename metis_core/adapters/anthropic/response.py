"""A non-streaming Anthropic Messages response -> one canonical assistant Message.

Builds through the same MessageAssembler as the stream translator, so a response and the
stream of the same content give the same Message. Server tools, MCP blocks and compaction become
hosted blocks (hosted.py), citations a typed field of their text; a block type newer than this
adapter is skipped and named in provider_raw, never turned into text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.anthropic import hosted
from metis_core.adapters.anthropic.usage import usage_from_wire
from metis_core.errors import MalformedResponseError
from metis_core.messages import Message, MessageStatus, StreamEvent
from metis_core.transport.wire import WireResponse, request_id_from_headers

if TYPE_CHECKING:
    from metis_core.adapters.base import RequestContext

API = "messages"

STOP_REASONS: dict[str, str] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "stop_sequence": "stop_sequence",
    "tool_use": "tool_use",
    "refusal": "refusal",
    "pause_turn": "end_turn",
}


def canonical_stop_reason(raw: str | None) -> str | None:
    if raw is None:
        return None
    return STOP_REASONS.get(raw, "end_turn")


def raw_details(data: dict[str, Any]) -> dict[str, Any]:
    """What we keep of the provider's own answer for round trips and diagnosis."""
    raw: dict[str, Any] = {}
    for key in ("id", "model", "stop_reason", "stop_sequence", "stop_details", "container"):
        value = data.get(key)
        if value is not None:
            raw[key] = value
    return raw


def add_block(assembler: MessageAssembler, index: Any, block: dict[str, Any], skipped: list[str]) -> list[StreamEvent]:
    """Add one whole content block; returns the tool_use_start event of a client tool call."""
    kind = str(block.get("type"))
    if kind == "text":
        assembler.text(index, block.get("text") or "")
        for wire in block.get("citations") or ():
            if isinstance(wire, dict):
                assembler.citation(index, hosted.citation(wire, assembler.origin))
    elif kind == "tool_use":
        name, tool_id = block.get("name"), block.get("id")
        if not isinstance(name, str) or not name:
            raise MalformedResponseError(f"content[{index}] is a tool_use without a name", provider="anthropic")
        start = assembler.tool_start(index, tool_id if isinstance(tool_id, str) and tool_id else None, name)
        tool_input = block.get("input")
        assembler.tool_input_object(index, tool_input if isinstance(tool_input, dict) else {})
        extras = hosted.tool_use_extras(block)
        if extras:
            assembler.provider_raw.setdefault(hosted.TOOL_USE_EXTRAS, {})[start.id] = extras
        return [start]
    elif hosted.is_call(kind):
        assembler.hosted(index, dict(block), hosted.build_call)
    elif hosted.is_result(kind):
        assembler.hosted(index, dict(block), hosted.build_result)
    elif kind == "compaction":
        assembler.hosted(index, dict(block), hosted.build_compaction)
    elif kind == "thinking":
        assembler.thinking(index, block.get("thinking") or "")
        if block.get("signature") is not None:
            assembler.thinking_signature(index, block["signature"])
    elif kind == "redacted_thinking":
        assembler.redacted_thinking(index, block.get("data") or "")
    else:
        skipped.append(kind)
    return []


def parse_response(response: WireResponse, context: RequestContext) -> Message:
    data = response.json("anthropic")
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, list):
        raise MalformedResponseError(
            "response has no `content` list; is the base URL an Anthropic Messages endpoint?",
            provider="anthropic",
            status=response.status,
            request_id=request_id_from_headers(response.headers),
        )
    assembler = MessageAssembler(context, api=API)
    skipped: list[str] = []
    for index, block in enumerate(content):
        if isinstance(block, dict):
            add_block(assembler, index, block, skipped)
    assembler.set_usage(usage_from_wire(data.get("usage")))
    assembler.provider_raw.update(raw_details(data))
    if skipped:
        assembler.provider_raw["skipped_block_types"] = skipped
    # Arguments arrive parsed here, so nothing can be half-built: the message is COMPLETE.
    return assembler.build(MessageStatus.COMPLETE, canonical_stop_reason(data.get("stop_reason")))
