"""A non-streaming Anthropic Messages response -> one canonical assistant Message.

Read straight into canonical blocks, without the stream assembler (there is no stream); the tests
hold it to exactly the Message the assembler builds from the same blocks, so a response and the
stream of the same content give the same Message (`add_block` feeds whole blocks to a stream's
assembler). Server tools, MCP blocks and compaction become hosted blocks (hosted.py), citations a
typed field of their text; a block type newer than this adapter is skipped and named in
provider_raw, never turned into text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metis_core.adapters._common.json_hashable import hashable_json
from metis_core.adapters._common.response_message import assistant_message
from metis_core.adapters.anthropic import hosted
from metis_core.adapters.anthropic.usage import usage_from_wire
from metis_core.errors import MalformedResponseError
from metis_core.messages import (
    BlockOrigin,
    Message,
    MessageStatus,
    RedactedThinkingBlock,
    ToolUseBlock,
    Usage,
    prechecked,
)
from metis_core.transport.wire import WireResponse, request_id_from_headers

if TYPE_CHECKING:
    from metis_core.adapters._common.assembler import HostedBuilder, MessageAssembler
    from metis_core.adapters.base import RequestContext
    from metis_core.messages import StreamEvent

API = "messages"
_COMPLETE = MessageStatus.COMPLETE  # bound once: a `MessageStatus.X` lookup is slow on Python 3.11

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
    get = data.get  # written out, not a loop over the six names: this runs for every answer
    raw: dict[str, Any] = {}
    if (value := get("id")) is not None:
        raw["id"] = value
    if (value := get("model")) is not None:
        raw["model"] = value
    if (value := get("stop_reason")) is not None:
        raw["stop_reason"] = value
    if (value := get("stop_sequence")) is not None:
        raw["stop_sequence"] = value
    if (value := get("stop_details")) is not None:
        raw["stop_details"] = value
    if (value := get("container")) is not None:
        raw["container"] = value
    usage = get("usage")
    if isinstance(usage, dict) and (value := usage.get("iterations")):
        raw["usage_iterations"] = value  # compaction and advisor calls, billed beside the top-level counts
    return raw


def add_block(assembler: MessageAssembler, index: Any, block: dict[str, Any], skipped: list[str]) -> list[StreamEvent]:
    """Add one whole content block; returns the stream events of its text, citations or client tool call
    (a hosted or redacted-thinking block's `whole_block` event is the caller's, once it is added)."""
    kind = str(block.get("type"))
    if kind == "text":
        events: list[StreamEvent] = []
        for wire in block.get("citations") or ():
            if isinstance(wire, dict):
                events.append(assembler.citation(index, hosted.citation(wire, assembler.origin)))
        text = block.get("text") or ""
        if text or not events:
            events.append(assembler.text(index, text))
        return events
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


class _Blocks:
    """The canonical blocks of one whole response, in order, with what the message records of them."""

    __slots__ = ("content", "context", "dropped", "origin", "pending_hosted", "provider_raw", "skipped")

    def __init__(self, context: RequestContext) -> None:
        self.context = context
        self.content: list[Any] = []
        self.pending_hosted: list[tuple[int, dict[str, Any], HostedBuilder]] = []
        """(position, payload, builder): built after the loop, as the assembler builds them at the end."""
        self.provider_raw: dict[str, Any] = {}
        self.skipped: list[str] = []
        self.dropped = 0
        self.origin: BlockOrigin | None = None

    def string(self, value: object, what: str) -> str:
        if not isinstance(value, str):
            raise MalformedResponseError(f"{what} is {type(value).__name__}, not a string",
                                         provider=self.context.provider)
        return value

    def block_origin(self) -> BlockOrigin:
        if self.origin is None:
            ctx = self.context
            self.origin = BlockOrigin(provider=ctx.provider, api=API, model=ctx.model_name)
        return self.origin

    def add(self, index: int, block: dict[str, Any]) -> None:
        kind = str(block.get("type"))
        if kind == "text":
            text = self.string(block.get("text") or "", "text")
            wires = block.get("citations")  # most text has none: no comprehension (a frame of its own) runs then
            citations = [hosted.citation(wire, self.block_origin())
                         for wire in wires if isinstance(wire, dict)] if wires else None
            if text or citations:
                self.content.append(prechecked.cited_text_block(text, citations or None))
        elif kind == "tool_use":
            self.tool_use(index, block)
        elif hosted.is_call(kind):
            self.pending_hosted.append((len(self.content), dict(block), hosted.build_call))
        elif hosted.is_result(kind):
            self.pending_hosted.append((len(self.content), dict(block), hosted.build_result))
        elif kind == "compaction":
            self.pending_hosted.append((len(self.content), dict(block), hosted.build_compaction))
        elif kind == "thinking":
            text = self.string(block.get("thinking") or "", "thinking text")
            signature = block.get("signature")
            if signature is not None:
                signature = self.string(signature, "thinking signature")
            origin = self.block_origin() if signature is not None else None
            self.content.append(prechecked.thinking_block(text, signature, origin))
        elif kind == "redacted_thinking":
            data = self.string(block.get("data") or "", "redacted thinking data")
            self.content.append(RedactedThinkingBlock(data=data, origin=self.block_origin()))
        else:
            self.skipped.append(kind)

    def tool_use(self, index: int, block: dict[str, Any]) -> None:
        name, tool_id = block.get("name"), block.get("id")
        if not isinstance(name, str) or not name:
            raise MalformedResponseError(f"content[{index}] is a tool_use without a name", provider="anthropic")
        ctx = self.context
        canonical_id = ctx.tool_ids.issue(ctx.provider, tool_id if isinstance(tool_id, str) and tool_id else None)
        tool_input = block.get("input")
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        if hashable_json(tool_input):
            self.content.append(prechecked.tool_use_block(canonical_id, name, tool_input) if type(tool_input) is dict
                                else ToolUseBlock(id=canonical_id, name=name, input=tool_input))
        else:
            self.dropped += 1  # arguments no JSON hash can hold: the call is left out, the message PARTIAL
        extras = hosted.tool_use_extras(block)
        if extras:
            self.provider_raw.setdefault(hosted.TOOL_USE_EXTRAS, {})[canonical_id] = extras

    def built_content(self) -> list[Any]:
        if not self.pending_hosted:
            return self.content
        content = list(self.content)
        # from the back, so earlier positions stay put
        for position, payload, build in self.pending_hosted[::-1]:
            content.insert(position, build(payload, "", self.block_origin()))
        return content


def parse_response(response: WireResponse, context: RequestContext) -> Message:
    """The whole answer read straight into canonical blocks (no stream assembler: there is no stream).

    Gives exactly the Message the assembler would build from the same blocks (tests compare the two
    on every recorded response), without its slots and stream events on the gateway's hot path."""
    data = response.json("anthropic")
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, list):
        raise MalformedResponseError(
            "response has no `content` list; is the base URL an Anthropic Messages endpoint?",
            provider="anthropic",
            status=response.status,
            request_id=request_id_from_headers(response.headers),
        )
    blocks = _Blocks(context)
    for index, block in enumerate(content):
        if isinstance(block, dict):
            blocks.add(index, block)
    usage = usage_from_wire(data.get("usage"))
    if not isinstance(usage, Usage):
        raise MalformedResponseError("usage could not be read", provider=context.provider)
    provider_raw = blocks.provider_raw
    provider_raw.update(raw_details(data))
    if blocks.skipped:
        provider_raw["skipped_block_types"] = blocks.skipped
    status = _COMPLETE  # arguments arrive parsed here, so nothing can be half-built
    built = blocks.built_content()
    if blocks.dropped:
        status = MessageStatus.PARTIAL
        provider_raw.setdefault("incomplete", "invalid tool arguments")
    return assistant_message(context, built, status, canonical_stop_reason(data.get("stop_reason")), usage,
                             provider_raw)

