"""The Anthropic Messages shape: `POST /v1/messages` bodies in, Messages answers and SSE out.

Thinking goes back to the client only when Claude signed it, on Anthropic, Bedrock or Vertex (one
signer; anything else would be rejected on the client's next turn). In a stream a thinking block
stays open until the end, where its `signature_delta` arrives with the final message; blocks are
numbered in the order they are started. Anthropic's own server-tool blocks, compaction and redacted
thinking are written where they stand (`whole_block` events), its citations as `citations_delta`.
"""

from __future__ import annotations

from typing import Any, TypeGuard

import orjson

from metis_core.adapters._common.hosted import HOSTED_CLASSES, HostedBlock, cited, replayable
from metis_core.adapters._common.platform_origin import claude_platform_model, claude_signed, redacted_data
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.hosted import answer_container, answer_stop_details
from metis_core.adapters.anthropic.hosted import call_fields as anthropic_call_fields
from metis_core.adapters.anthropic.request import API, PROVIDER
from metis_core.adapters.anthropic.request_reader import read_request
from metis_core.gateway.shapes.base import InboundRequest, InboundShape, StreamWriter, hit_continuation_limit, sse
from metis_core.ids import new_ulid
from metis_core.messages import (
    CitationDelta,
    Message,
    MessageComplete,
    ProviderToolCallBlock,
    RedactedThinkingBlock,
    StreamError,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    ToolUseEnd,
    ToolUseInputDelta,
    ToolUseStart,
    Usage,
    UsageUpdate,
    WholeBlock,
)
from metis_core.messages.blocks import BLOCK_CLASSES, is_block

_STOP_REASONS = {"end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal", "pause_turn"}
ERROR_TYPES = {
    "invalid_request": "invalid_request_error", "too_large": "request_too_large", "auth": "authentication_error",
    "permission": "permission_error", "scope": "permission_error", "not_found": "not_found_error",
    "rate_limit": "rate_limit_error", "upstream": "api_error", "overloaded": "overloaded_error",
}  # fmt: skip


def _stop_reason(message: Message) -> str:
    if hit_continuation_limit(message):
        return "pause_turn"  # still paused when the gateway stopped continuing it (continued_call.py)
    reason = message.metadata.stop_reason
    return reason if reason in _STOP_REASONS else "end_turn"


def _usage(usage: Usage | None) -> dict[str, int]:
    usage = usage or Usage()
    return {
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cached_input_tokens,
    }  # fmt: skip


def _is_hosted(block: object) -> TypeGuard[HostedBlock]:
    """`isinstance(block, HOSTED_CLASSES)`, decided as `is_block` decides it."""
    kind = type(block)
    if kind in BLOCK_CLASSES:
        return kind in HOSTED_CLASSES
    return isinstance(block, HOSTED_CLASSES)


def _signed(block: ThinkingBlock | RedactedThinkingBlock) -> bool:
    """Signed by Claude on Anthropic, Bedrock or Vertex: one signer, so a client replays it wherever Claude runs."""
    return claude_signed(block.origin)


class AnthropicMessagesShape(InboundShape):
    name = "anthropic"
    namespace = "anthropic"
    id_style = "anthropic"
    natural_provider = "anthropic"
    extra_providers = frozenset({"anthropic"})
    forced_tool_is_schema = True

    def read(self, body: dict[str, Any], model_name: str, session_id: str) -> InboundRequest:
        tool_ids = ToolIdMap()
        read = read_request({**body, "model": model_name}, session_id=session_id, tool_ids=tool_ids)
        return InboundRequest(read.messages, read.tools, read.options, tool_ids, stream=bool(body.get("stream")))

    def content(self, message: Message, tool_ids: ToolIdMap) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        call_fields = anthropic_call_fields(message)
        for block in message.content:
            if is_block(block, TextBlock):
                citations = cited(block, PROVIDER, API) if block.citations else None
                out.append({"type": "text", "text": block.text, "citations": citations} if citations
                           else {"type": "text", "text": block.text})
            elif _is_hosted(block) and replayable(block, PROVIDER, API):
                out.append(block.payload)  # Anthropic's own server-tool block, as it sent it: the client replays it
            elif is_block(block, ToolUseBlock):
                out.append({"type": "tool_use", "id": self.client_tool_id(tool_ids, block.id), "name": block.name,
                            "input": block.input, **call_fields.get(block.id, {})})
            elif is_block(block, ThinkingBlock) and _signed(block):
                out.append({"type": "thinking", "thinking": block.text, "signature": block.signature or ""})
            elif is_block(block, RedactedThinkingBlock) and _signed(block):
                out.append({"type": "redacted_thinking", "data": redacted_data(block, API)})
        return out

    def response_body(self, message: Message, model: str, tool_ids: ToolIdMap) -> dict[str, Any]:
        return {
            "id": f"msg_{message.id}", "type": "message", "role": "assistant", "model": model,
            "content": self.content(message, tool_ids), "stop_reason": _stop_reason(message), "stop_sequence": None,
            "usage": _usage(message.metadata.usage),
            **({"container": container} if (container := answer_container(message)) else {}),
            **({"stop_details": details} if (details := answer_stop_details(message)) else {}),
        }  # fmt: skip

    def stream_writer(self, model: str, tool_ids: ToolIdMap, request: InboundRequest) -> StreamWriter:
        return AnthropicStreamWriter(self, model, tool_ids)

    def error_body(self, status: int, kind: str, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": ERROR_TYPES.get(kind, "api_error"), "message": message}}


class AnthropicStreamWriter(StreamWriter):
    def __init__(self, shape: AnthropicMessagesShape, model: str, tool_ids: ToolIdMap) -> None:
        self.shape = shape
        self.model = model
        self.tool_ids = tool_ids
        self.started = False
        self.usage = Usage()
        self.out_index: dict[int, int] = {}
        """canonical block index -> the index this stream gave it."""
        self.open_block: int | None = None
        """The open text or tool block (canonical index); thinking blocks stay open until the end."""
        self.open_thinking: list[int] = []
        self.tool_inputs: dict[int, bool] = {}
        self.failed = False

    def _start_message(self) -> bytes:
        self.started = True
        return sse("message_start", {"type": "message_start", "message": {
            "id": f"msg_{new_ulid()}", "type": "message", "role": "assistant", "model": self.model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": _usage(self.usage),
        }})  # fmt: skip

    def _close_open(self) -> bytes:
        if self.open_block is None:
            return b""
        index, self.open_block = self.out_index[self.open_block], None
        return sse("content_block_stop", {"type": "content_block_stop", "index": index})

    def _start_block(self, canonical: int, block: dict[str, Any], *, keep_open: bool = True) -> bytes:
        frames = b"" if block["type"] == "thinking" else self._close_open()
        index = self.out_index[canonical] = len(self.out_index)
        frames += sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
        if block["type"] == "thinking":
            self.open_thinking.append(canonical)
        elif keep_open:
            self.open_block = canonical
        return frames

    def _delta(self, canonical: int, delta: dict[str, Any]) -> bytes:
        index = self.out_index[canonical]
        return sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})

    def feed(self, event: StreamEvent) -> bytes:
        if self.failed:
            return b""
        frames = b""
        if isinstance(event, UsageUpdate):
            self.usage = event.usage
            return b"" if self.started else self._start_message()
        if not self.started:
            frames += self._start_message()
        if isinstance(event, TextDelta):
            if event.index not in self.out_index:
                frames += self._start_block(event.index, {"type": "text", "text": ""})
            frames += self._delta(event.index, {"type": "text_delta", "text": event.text})
        elif isinstance(event, ThinkingDelta):
            if not claude_platform_model(self.upstream_model):
                return frames  # unsigned reasoning cannot go back to an Anthropic client
            if event.index not in self.out_index:
                frames += self._start_block(event.index, {"type": "thinking", "thinking": "", "signature": ""})
            frames += self._delta(event.index, {"type": "thinking_delta", "thinking": event.text})
        elif isinstance(event, ToolUseStart):
            client_id = self.shape.client_tool_id(self.tool_ids, event.id)
            fields = event.provider_fields if self.upstream_provider == PROVIDER and event.provider_fields else {}
            frames += self._start_block(event.index, {"type": "tool_use", "id": client_id, "name": event.name,
                                                      "input": {}, **fields})
        elif isinstance(event, ToolUseInputDelta):
            self.tool_inputs[event.index] = True
            frames += self._delta(event.index, {"type": "input_json_delta", "partial_json": event.partial_json})
        elif isinstance(event, ToolUseEnd):
            if not self.tool_inputs.get(event.index) and event.input:
                whole = orjson.dumps(event.input).decode()
                frames += self._delta(event.index, {"type": "input_json_delta", "partial_json": whole})
            if self.open_block == event.index:
                frames += self._close_open()
        elif isinstance(event, WholeBlock) and isinstance(event.block, ThinkingBlock):
            if event.index in self.open_thinking:  # signed: its signature, then closed, as Anthropic streams it
                self.open_thinking.remove(event.index)
                frames += self._delta(event.index, {"type": "signature_delta", "signature": event.block.signature})
                frames += sse("content_block_stop", {"type": "content_block_stop",
                                                     "index": self.out_index[event.index]})
        elif isinstance(event, WholeBlock):
            frames += self._whole(event.index, event.block)
        elif isinstance(event, CitationDelta):
            citation = event.citation
            if citation.origin is not None and citation.origin.same_api(PROVIDER, API):
                if event.index not in self.out_index:
                    frames += self._start_block(event.index, {"type": "text", "text": "", "citations": []})
                frames += self._delta(event.index, {"type": "citations_delta", "citation": citation.payload})
        elif isinstance(event, StreamError):
            self.failed = True
            frames += self.fail(502, "overloaded" if event.retryable else "upstream", event.message)
        elif isinstance(event, MessageComplete):
            frames += self._finish(event.message)
        return frames

    def _whole(self, canonical: int, block: Any) -> bytes:
        """A block that arrived whole, written where it stands: Anthropic's own server-tool blocks and
        compaction as Anthropic sent them (a call's input as one input_json_delta, as Anthropic streams
        it), signed redacted thinking; another provider's blocks are not written (no client could replay them)."""
        if isinstance(block, RedactedThinkingBlock):
            if not _signed(block):
                return b""
            wire: dict[str, Any] = {"type": "redacted_thinking", "data": redacted_data(block, API)}
        elif isinstance(block, HOSTED_CLASSES) and replayable(block, PROVIDER, API):
            wire = block.payload
        else:
            return b""
        streamed_input = isinstance(block, ProviderToolCallBlock) and isinstance(wire.get("input"), dict)
        frames = self._start_block(canonical, {**wire, "input": {}} if streamed_input else wire, keep_open=False)
        if streamed_input and wire["input"]:
            frames += self._delta(canonical, {"type": "input_json_delta",
                                              "partial_json": orjson.dumps(wire["input"]).decode()})
        return frames + sse("content_block_stop", {"type": "content_block_stop", "index": self.out_index[canonical]})

    def _finish(self, message: Message) -> bytes:
        frames = self._close_open()
        for canonical, block in enumerate(message.content):
            if isinstance(block, ThinkingBlock) and canonical in self.open_thinking:
                if block.signature:
                    frames += self._delta(canonical, {"type": "signature_delta", "signature": block.signature})
                frames += sse("content_block_stop", {"type": "content_block_stop",
                                                     "index": self.out_index[canonical]})
            elif isinstance(block, ThinkingBlock) and _signed(block) and canonical not in self.out_index:
                frames += self._start_block(canonical, {"type": "thinking", "thinking": "", "signature": ""})
                frames += self._delta(canonical, {"type": "thinking_delta", "thinking": block.text})
                frames += self._delta(canonical, {"type": "signature_delta", "signature": block.signature or ""})
                frames += sse("content_block_stop", {"type": "content_block_stop",
                                                     "index": self.out_index[canonical]})
            elif isinstance(block, (RedactedThinkingBlock, *HOSTED_CLASSES)) and canonical not in self.out_index:
                frames += self._whole(canonical, block)  # no event announced it: it can only come last
            elif isinstance(block, TextBlock) and canonical not in self.out_index and block.text:
                citations = cited(block, PROVIDER, API) if block.citations else None
                frames += self._start_block(canonical, {"type": "text", "text": "", "citations": []} if citations
                                            else {"type": "text", "text": ""})
                for citation in citations or ():
                    frames += self._delta(canonical, {"type": "citations_delta", "citation": citation})
                frames += self._delta(canonical, {"type": "text_delta", "text": block.text}) + self._close_open()
        usage = message.metadata.usage or self.usage
        frames += sse("message_delta", {
            "type": "message_delta", "delta": {"stop_reason": _stop_reason(message), "stop_sequence": None,
                                               **({"container": c} if (c := answer_container(message)) else {}),
                                               **({"stop_details": d} if (d := answer_stop_details(message)) else {})},
            "usage": _usage(usage),
        })  # fmt: skip
        return frames + sse("message_stop", {"type": "message_stop"})

    def fail(self, status: int, kind: str, message: str) -> bytes:
        self.failed = True
        return sse("error", self.shape.error_body(status, kind, message))
