"""The OpenAI Chat Completions shape: `POST /v1/chat/completions` in, `chat.completion` and chunks out.

Thinking has no place in a chat completion, so it is not written (it stays in the record). Tool
calls are numbered per answer (`tool_calls[].index`) in the order they start; arguments stream as
the upstream's raw fragments, or whole at the call's end when the upstream sent them whole.
`stream_options.include_usage` adds the final usage chunk with an empty `choices`. Citations with a
URL become `url_citation` annotations (in a stream, one chunk before the finish).
"""

from __future__ import annotations

import time
from typing import Any

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.openai_chat.request import compact_json
from metis_core.adapters.openai_chat.request_reader import ChatRequestReader
from metis_core.gateway.shapes.base import (
    InboundRequest,
    InboundShape,
    StreamWriter,
    hit_continuation_limit,
    is_output_refusal,
    sse,
)
from metis_core.gateway.shapes.url_citations import chat_annotations, message_spans
from metis_core.ids import new_ulid
from metis_core.messages import (
    Message,
    MessageComplete,
    StreamError,
    StreamEvent,
    TextBlock,
    TextDelta,
    ToolUseBlock,
    ToolUseEnd,
    ToolUseInputDelta,
    ToolUseStart,
    Usage,
    UsageUpdate,
)

FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
                  "refusal": "content_filter"}
ERROR_TYPES = {
    "invalid_request": ("invalid_request_error", None), "too_large": ("invalid_request_error", "request_too_large"),
    "auth": ("invalid_request_error", "invalid_api_key"), "permission": ("invalid_request_error", "model_not_allowed"),
    "not_found": ("invalid_request_error", "model_not_found"), "scope": ("invalid_request_error", "insufficient_scope"),
    "rate_limit": ("rate_limit_error", "rate_limit_exceeded"),
    "upstream": ("server_error", None), "overloaded": ("server_error", "overloaded"),
}  # fmt: skip


def finish_reason(message: Message) -> str:
    if is_output_refusal(message):
        return "stop"  # what OpenAI sends with a structured-output refusal (SDK parsers raise on content_filter)
    if hit_continuation_limit(message):
        return "length"  # the answer so far, cut short: the gateway stopped continuing a paused answer
    return FINISH_REASONS.get(message.metadata.stop_reason or "end_turn", "stop")


def usage_body(usage: Usage | None) -> dict[str, Any]:
    usage = usage or Usage()
    prompt = usage.total_input_tokens
    return {
        "prompt_tokens": prompt, "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }  # fmt: skip


class OpenAIChatShape(InboundShape):
    name = "openai"
    namespace = "openai"
    id_style = "openai"
    natural_provider = "openai"
    extra_providers = frozenset({"openai", "openrouter", "openai_compatible"})

    def read(self, body: dict[str, Any], model_name: str, session_id: str) -> InboundRequest:
        reader = ChatRequestReader(provider="openai", session_id=session_id)
        read = reader.read({**body, "model": model_name})
        options = read.options
        stream = bool(body.get("stream"))
        options.extra.pop("stream", None)  # an explicit `false` matters to no upstream
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return InboundRequest(read.messages, read.tools, options, read.tool_ids, stream=stream,
                              include_usage=include_usage)

    def message_body(self, message: Message, tool_ids: ToolIdMap) -> dict[str, Any]:
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        if is_output_refusal(message):
            return {"role": "assistant", "content": None, "refusal": text}
        calls = [
            {"id": self.client_tool_id(tool_ids, b.id), "type": "function",
             "function": {"name": b.name, "arguments": compact_json(b.input)}}
            for b in message.content if isinstance(b, ToolUseBlock)
        ]  # fmt: skip
        body: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None, "refusal": None}
        if calls:
            body["tool_calls"] = calls
        cited = chat_annotations(message_spans(message), message)
        if cited:
            body["annotations"] = cited
        return body

    def response_body(self, message: Message, model: str, tool_ids: ToolIdMap) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{message.id}", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": self.message_body(message, tool_ids),
                         "finish_reason": finish_reason(message), "logprobs": None}],
            "usage": usage_body(message.metadata.usage),
        }  # fmt: skip

    def stream_writer(self, model: str, tool_ids: ToolIdMap, request: InboundRequest) -> StreamWriter:
        return ChatStreamWriter(self, model, tool_ids, include_usage=request.include_usage)

    def error_body(self, status: int, kind: str, message: str) -> dict[str, Any]:
        error_type, code = ERROR_TYPES.get(kind, ("server_error", None))
        return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


class ChatStreamWriter(StreamWriter):
    def __init__(self, shape: OpenAIChatShape, model: str, tool_ids: ToolIdMap, *, include_usage: bool) -> None:
        self.shape = shape
        self.tool_ids = tool_ids
        self.include_usage = include_usage
        self.head = {"id": f"chatcmpl-{new_ulid()}", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": model}
        self.started = False
        self.calls: dict[int, int] = {}
        """canonical block index -> tool_calls[].index."""
        self.streamed_arguments: set[int] = set()
        self.usage: Usage | None = None
        self.failed = False

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse(None, {**self.head, "choices": [choice]})

    def feed(self, event: StreamEvent) -> bytes:
        if self.failed:
            return b""
        frames = b""
        if not self.started and not isinstance(event, UsageUpdate | StreamError):
            self.started = True
            frames += self._chunk({"role": "assistant", "content": ""})
        if isinstance(event, TextDelta):
            frames += self._chunk({"content": event.text})
        elif isinstance(event, ToolUseStart):
            position = self.calls[event.index] = len(self.calls)
            frames += self._chunk({"tool_calls": [{
                "index": position, "id": self.shape.client_tool_id(self.tool_ids, event.id), "type": "function",
                "function": {"name": event.name, "arguments": ""},
            }]})  # fmt: skip
        elif isinstance(event, ToolUseInputDelta) and event.index in self.calls:
            self.streamed_arguments.add(event.index)
            frames += self._chunk({"tool_calls": [{"index": self.calls[event.index],
                                                   "function": {"arguments": event.partial_json}}]})
        elif isinstance(event, ToolUseEnd) and event.index in self.calls:
            if event.index not in self.streamed_arguments:
                frames += self._chunk({"tool_calls": [{"index": self.calls[event.index],
                                                       "function": {"arguments": compact_json(event.input)}}]})
        elif isinstance(event, UsageUpdate):
            self.usage = event.usage
        elif isinstance(event, StreamError):
            frames += self.fail(502, "overloaded" if event.retryable else "upstream", event.message)
        elif isinstance(event, MessageComplete):
            cited = chat_annotations(message_spans(event.message), event.message)
            if cited:  # one chunk: the SDK's accumulator takes a list without indexes only once
                frames += self._chunk({"annotations": cited})
            frames += self._chunk({}, finish_reason(event.message))
            if self.include_usage:
                usage = usage_body(event.message.metadata.usage or self.usage)
                frames += sse(None, {**self.head, "choices": [], "usage": usage})
            frames += b"data: [DONE]\n\n"
        return frames

    def refusal(self, text: str) -> bytes:
        frames = b""
        if not self.started:
            self.started = True
            frames += self._chunk({"role": "assistant", "content": None})
        return frames + self._chunk({"refusal": text})

    def fail(self, status: int, kind: str, message: str) -> bytes:
        self.failed = True
        return sse(None, self.shape.error_body(status, kind, message))
