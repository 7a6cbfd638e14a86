"""Anthropic SSE events -> canonical stream events, through the shared MessageAssembler.

Handles message_start (including content and a stop reason carried inside it, as programmatic
tool calling sends), content_block_start/delta/stop (text, citations, input_json, thinking,
signature, compaction deltas), message_delta, message_stop, ping and `error` events, and the
whitespace live servers pad inside `data` JSON. Server tools and compaction stream into hosted
blocks, never client tool calls; each such block (and redacted thinking) is a `whole_block` event
at its content_block_stop, each citation a `citation_delta`. A stream without message_stop, or a
tool call whose JSON was cut off (stop_reason max_tokens), ends PARTIAL with an `error` event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.anthropic import hosted
from metis_core.adapters.anthropic.errors import error_class_name
from metis_core.adapters.anthropic.response import API, add_block, canonical_stop_reason, raw_details
from metis_core.adapters.anthropic.usage import merge_usage, usage_from_wire
from metis_core.adapters.base import StreamTranslator
from metis_core.errors import RETRYABLE_CLASSES, MalformedResponseError
from metis_core.messages import StreamEvent
from metis_core.transport.framing import WireChunk

if TYPE_CHECKING:
    from metis_core.adapters.base import RequestContext

WHOLE_KINDS = frozenset({"compaction", "redacted_thinking"})
"""Block kinds besides server tools that stream no canonical deltas: a `whole_block` event at their stop."""


class AnthropicStreamTranslator(StreamTranslator):
    def __init__(self, context: RequestContext) -> None:
        self._assembler = MessageAssembler(context, api=API)
        self._usage: dict[str, Any] = {}
        self._kinds: dict[int, str] = {}
        self._stop_reason: str | None = None
        self._message: dict[str, Any] = {}
        self._skipped: list[str] = []
        self._done = False

    def feed(self, chunk: WireChunk) -> list[StreamEvent]:
        if self._done or chunk.event == "ping":
            return []
        try:
            data = orjson.loads(chunk.data)
        except orjson.JSONDecodeError as exc:
            raise MalformedResponseError(
                f"stream event {chunk.event!r} is not JSON ({exc}): {chunk.data[:200]!r}", provider="anthropic"
            ) from None
        kind = data.get("type")
        if kind == "content_block_delta":
            return self._delta(data["index"], data.get("delta") or {})
        if kind == "content_block_start":
            return self._start(data["index"], data.get("content_block") or {})
        if kind == "content_block_stop":
            index = data["index"]
            kind = self._kinds.get(index)
            if kind == "tool_use":
                return [self._assembler.tool_end(index)]
            if kind in WHOLE_KINDS or kind == "thinking" or (kind is not None and (hosted.is_call(kind)
                                                                                  or hosted.is_result(kind))):
                whole = self._assembler.whole_block(index)  # a server tool, compaction or redacted thinking
                return [whole] if whole is not None else []
            return []
        if kind == "message_delta":
            stop_reason = (data.get("delta") or {}).get("stop_reason")
            if stop_reason is not None and not isinstance(stop_reason, str):
                raise MalformedResponseError(
                    f"message_delta stop_reason is {type(stop_reason).__name__}, not a string", provider="anthropic"
                )
            self._stop_reason = stop_reason or self._stop_reason
            self._message.update({k: v for k, v in (data.get("delta") or {}).items() if v is not None})
            return [self._assembler.set_usage(usage_from_wire(merge_usage(self._usage, data.get("usage"))))]
        if kind == "message_start":
            self._message = dict(data.get("message") or {})
            self._stop_reason = self._message.get("stop_reason") or self._stop_reason
            out: list[StreamEvent] = []
            for position, block in enumerate(self._message.get("content") or ()):
                if isinstance(block, dict):  # a whole message inside message_start (programmatic tool calling)
                    key = ("message_start", position)
                    out.extend(add_block(self._assembler, key, block, self._skipped))
                    whole = self._assembler.whole_block(key)
                    if whole is not None:
                        out.append(whole)
            out.append(self._assembler.set_usage(usage_from_wire(merge_usage(self._usage, self._message.get("usage")))))
            return out
        if kind == "message_stop":
            self._stamp_raw()
            events = self._assembler.complete(canonical_stop_reason(self._stop_reason))
            self._done = True  # after complete(): if it raised, finish() still ends the stream once
            return events
        if kind == "error":
            self._done = True
            self._stamp_raw()
            error_class, message = error_class_name(data.get("error"))
            return self._assembler.fail(error_class.value, message, retryable=error_class in RETRYABLE_CLASSES)
        return []  # ping with another event name, or a type newer than this adapter

    def _start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        kind = str(block.get("type"))
        self._kinds[index] = kind
        asm = self._assembler
        if kind == "text":
            text = block.get("text") or ""
            return [asm.text(index, text)] if text else []
        if kind == "tool_use":
            name, tool_id = block.get("name"), block.get("id")
            if not isinstance(name, str) or not name:
                raise MalformedResponseError(
                    f"content_block_start {index} is a tool_use without a name", provider="anthropic"
                )
            event = asm.tool_start(index, tool_id if isinstance(tool_id, str) and tool_id else None, name)
            initial = block.get("input")
            if isinstance(initial, dict) and initial:
                asm.tool_input_object(index, initial)
            extras = hosted.tool_use_extras(block)
            if extras:
                asm.provider_raw.setdefault(hosted.TOOL_USE_EXTRAS, {})[event.id] = extras
                event.provider_fields = extras
            return [event]
        if hosted.is_call(kind):
            asm.hosted(index, dict(block), hosted.build_call)
            return []
        if hosted.is_result(kind):
            asm.hosted(index, dict(block), hosted.build_result)
            return []
        if kind == "compaction":
            asm.hosted(index, dict(block), hosted.build_compaction)
            return []
        if kind == "thinking":
            out: list[StreamEvent] = []
            if block.get("thinking"):
                out.append(asm.thinking(index, block["thinking"]))
            if block.get("signature"):
                asm.thinking_signature(index, block["signature"])
            return out
        if kind == "redacted_thinking":
            asm.redacted_thinking(index, block.get("data") or "")
            return []
        self._skipped.append(kind)
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        kind = delta.get("type")
        asm = self._assembler
        if kind == "text_delta":
            return [asm.text(index, delta["text"])]
        if kind == "input_json_delta":
            fragment = delta.get("partial_json") or ""
            if not isinstance(fragment, str):
                raise MalformedResponseError(
                    f"input_json_delta partial_json is {type(fragment).__name__}, not a string", provider="anthropic"
                )
            if self._kinds.get(index) != "tool_use":
                if fragment and asm.has_hosted(index):  # a server tool's input: never a client call
                    asm.hosted_fragment(index, fragment)
                return []
            return [asm.tool_input(index, fragment)] if fragment else []
        if kind == "citations_delta":
            wire = delta.get("citation")
            if isinstance(wire, dict):
                return [asm.citation(index, hosted.citation(wire, asm.origin))]
            return []
        if kind == "compaction_delta":
            content = delta.get("content")
            if isinstance(content, str) and asm.has_hosted(index):
                asm.hosted_fragment(index, content)
            return []
        if kind == "thinking_delta":
            return [asm.thinking(index, delta["thinking"])]
        if kind == "signature_delta":
            asm.thinking_signature(index, delta["signature"])
        return []  # newer delta kinds carry nothing canonical

    def _stamp_raw(self) -> None:
        self._assembler.provider_raw.update(raw_details({**self._message, "usage": self._usage}))
        if self._stop_reason is not None:
            self._assembler.provider_raw["stop_reason"] = self._stop_reason
        if self._skipped:
            self._assembler.provider_raw["skipped_block_types"] = list(self._skipped)

    def finish(self) -> list[StreamEvent]:
        if self._done:
            return []
        self._done = True
        self._stamp_raw()
        return self._assembler.fail(
            "network",
            "the stream ended before message_stop (connection dropped or body cut off); "
            "the partial answer is kept, retry the turn for a full one",
            retryable=True,
        )
