"""ConverseStream events (already unframed by eventstream.py) -> canonical stream events.

Events: messageStart, contentBlockStart (a toolUse's id and name), contentBlockDelta (text,
toolUse input JSON, reasoningContent text / signature / redactedContent, citation),
contentBlockStop, messageStop (stop reason), then `metadata` (usage, metrics, guardrail trace),
after which the message is complete. Exception messages end the stream with a classified `error`
event; a stream without messageStop ends PARTIAL with an `error` event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.base import StreamTranslator
from metis_core.adapters.bedrock.errors import stream_exception
from metis_core.adapters.bedrock.eventstream import EXCEPTION_PREFIX
from metis_core.adapters.bedrock.request import API
from metis_core.adapters.bedrock.response import PROVIDER, canonical_stop_reason, citation, raw_details
from metis_core.adapters.bedrock.usage import usage_from_wire
from metis_core.errors import RETRYABLE_CLASSES, MalformedResponseError
from metis_core.messages import StreamEvent
from metis_core.transport.framing import WireChunk

if TYPE_CHECKING:
    from metis_core.adapters.base import RequestContext


class BedrockStreamTranslator(StreamTranslator):
    def __init__(self, context: RequestContext) -> None:
        self._asm = MessageAssembler(context, api=API)
        self._kinds: dict[int, str] = {}
        self._stop: object = None
        self._stopped = False
        self._extra: dict[str, Any] = {}
        self._done = False

    def feed(self, chunk: WireChunk) -> list[StreamEvent]:
        if self._done:
            return []
        event = chunk.event or ""
        if event.startswith(EXCEPTION_PREFIX):
            self._done = True
            self._stamp_raw()
            error_class, message = stream_exception(event.removeprefix(EXCEPTION_PREFIX), chunk.data)
            return self._asm.fail(error_class.value, message, retryable=error_class in RETRYABLE_CLASSES)
        try:
            data = orjson.loads(chunk.data)
        except orjson.JSONDecodeError as exc:
            raise MalformedResponseError(f"stream event {event!r} is not JSON ({exc}): {chunk.data[:200]!r}",
                                         provider=PROVIDER) from None
        if not isinstance(data, dict):
            raise MalformedResponseError(f"stream event {event!r} is not an object", provider=PROVIDER)
        if event == "contentBlockDelta":
            return self._delta(data.get("contentBlockIndex"), data.get("delta") or {})
        if event == "contentBlockStart":
            return self._start(data.get("contentBlockIndex"), data.get("start") or {})
        if event == "contentBlockStop":
            return self._stop_block(data.get("contentBlockIndex"))
        if event == "messageStop":
            self._stop, self._stopped = data.get("stopReason"), True
            self._extra.update(data)
            return []
        if event == "metadata":
            self._extra.update({k: v for k, v in data.items() if k != "usage"})
            out: list[StreamEvent] = [self._asm.set_usage(usage_from_wire(data.get("usage")))]
            if self._stopped:
                out.extend(self._complete())
            return out
        return []  # messageStart, or an event newer than this adapter

    def _index(self, value: object) -> int:
        if type(value) is not int:
            raise MalformedResponseError(f"contentBlockIndex is {value!r}, not an integer", provider=PROVIDER)
        return value

    def _start(self, index: object, start: dict[str, Any]) -> list[StreamEvent]:
        key = self._index(index)
        tool = start.get("toolUse")
        if not isinstance(tool, dict):
            return []
        name, tool_id = tool.get("name"), tool.get("toolUseId")
        if not isinstance(name, str) or not name:
            raise MalformedResponseError(f"contentBlockStart {key} is a toolUse without a name", provider=PROVIDER)
        self._kinds[key] = "toolUse"
        return [self._asm.tool_start(key, tool_id if isinstance(tool_id, str) and tool_id else None, name)]

    def _delta(self, index: object, delta: dict[str, Any]) -> list[StreamEvent]:
        key = self._index(index)
        asm = self._asm
        if "text" in delta:
            return [asm.text(key, delta["text"])]
        if "toolUse" in delta:
            fragment = (delta["toolUse"] or {}).get("input") or ""
            return [asm.tool_input(key, fragment)] if fragment else []
        if "reasoningContent" in delta:
            reasoning = delta["reasoningContent"] or {}
            if "redactedContent" in reasoning:
                self._kinds[key] = "redacted"
                asm.redacted_thinking(key, reasoning["redactedContent"])
                return []
            self._kinds[key] = "reasoning"
            if "signature" in reasoning:
                asm.thinking_signature(key, reasoning["signature"])
                return []
            return [asm.thinking(key, reasoning.get("text") or "")]
        if "citation" in delta and isinstance(delta["citation"], dict):
            return [asm.citation(key, citation(delta["citation"], asm.origin))]
        return []

    def _stop_block(self, index: object) -> list[StreamEvent]:
        key = self._index(index)
        kind = self._kinds.get(key)
        if kind == "toolUse":
            return [self._asm.tool_end(key)]
        if kind in ("reasoning", "redacted"):
            whole = self._asm.whole_block(key)
            return [whole] if whole is not None else []
        return []

    def _stamp_raw(self) -> None:
        self._asm.provider_raw.update(raw_details(self._stop, self._extra))

    def _complete(self) -> list[StreamEvent]:
        self._stamp_raw()
        events = self._asm.complete(canonical_stop_reason(self._stop))
        self._done = True
        return events

    def finish(self) -> list[StreamEvent]:
        if self._done:
            return []
        if self._stopped:  # messageStop came, the metadata event did not: complete, without usage
            return self._complete()
        self._done = True
        self._stamp_raw()
        return self._asm.fail(
            "network",
            "the stream ended before messageStop (connection dropped or body cut off); "
            "the partial answer is kept, retry the turn for a full one",
            retryable=True,
        )
