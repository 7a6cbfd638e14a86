"""Ollama NDJSON stream -> canonical StreamEvents: one JSON object per line, the last with done: true.

Lines carry `message.content` and `message.thinking` deltas; tool calls arrive whole (arguments as
an object, no id) and are closed at once; the `done: true` line carries done_reason and counts. An
`{"error": ...}` line (HTTP status stays 200), an unparsable line or a body that ends without
`done: true` ends the stream with an error event and a PARTIAL/ERROR message. `/api/generate`
lines (`response`, top-level `thinking`) are read the same way; this module builds no requests.
"""

from __future__ import annotations

from typing import Any

import orjson

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.base import RequestContext, StreamTranslator
from metis_core.adapters.ollama.errors import error_class_for_text
from metis_core.adapters.ollama.request import API
from metis_core.adapters.ollama.usage import stop_reason_from_ollama, timings_from_ollama, usage_from_ollama
from metis_core.errors import RETRYABLE_CLASSES, ErrorClass
from metis_core.messages import StreamEvent
from metis_core.transport.framing import WireChunk

TRUNCATED_MESSAGE = "the Ollama stream ended before its final done:true line (connection dropped or the server stopped)"


class OllamaStreamTranslator(StreamTranslator):
    def __init__(self, context: RequestContext) -> None:
        self.assembler = MessageAssembler(context, api=API, unsigned_thinking_origin=True)
        self._segment = 0
        self._last_kind = ""
        self._key: tuple[str, int] = ("", 0)
        """The assembler key of the text or thinking block the next delta of `_last_kind` extends."""
        self._tool_count = 0

    # --- the StreamTranslator contract --------------------------------------------------------

    def feed(self, chunk: WireChunk) -> list[StreamEvent]:
        if self.assembler.finished:
            return []
        try:
            line = orjson.loads(chunk.data)
        except orjson.JSONDecodeError:
            return self.abort(ErrorClass.OTHER, f"Ollama sent a line that is not JSON: {chunk.data[:200]!r}")
        if not isinstance(line, dict):
            return self.abort(ErrorClass.OTHER, f"Ollama sent a line that is not a JSON object: {chunk.data[:200]!r}")
        return self.apply(line)

    def finish(self) -> list[StreamEvent]:
        if self.assembler.finished:
            return []
        return self.abort(ErrorClass.NETWORK, TRUNCATED_MESSAGE)

    # --- shared with the non-streaming parser ----------------------------------------------------

    def apply(self, line: dict[str, Any]) -> list[StreamEvent]:
        """Translate one decoded line (or a whole non-streaming body, which has the same shape)."""
        error = line.get("error")
        if error is not None:
            text = error if isinstance(error, str) else orjson.dumps(error).decode()
            return self.abort(error_class_for_text(text), text)
        events: list[StreamEvent] = []
        message = line.get("message")
        source = message if isinstance(message, dict) else line  # /api/generate: fields at the top
        thinking = source.get("thinking")
        if thinking:
            events.append(self._delta("thinking", thinking))
        content = source.get("content") if source is message else line.get("response")
        if content:
            events.append(self._delta("text", content))
        calls = source.get("tool_calls")
        if calls:
            tool_events = self._tool_calls(calls)
            if tool_events is None:
                return events + self.abort(
                    ErrorClass.OTHER, f"Ollama sent a malformed tool call: {orjson.dumps(calls)[:200]!r}"
                )
            events.extend(tool_events)
        if line.get("done") is True:
            events.extend(self._done(line))
        return events

    def abort(self, error_class: ErrorClass, message: str) -> list[StreamEvent]:
        return self.assembler.fail(error_class.value, message, retryable=error_class in RETRYABLE_CLASSES)

    # --- pieces --------------------------------------------------------------------------------

    def _delta(self, kind: str, text: str) -> StreamEvent:
        if kind != self._last_kind:  # a new block whenever the kind changes, so order is kept
            self._segment += 1
            self._last_kind = kind
            self._key = (kind, self._segment)
        if kind == "text":
            return self.assembler.text(self._key, text)
        return self.assembler.thinking(self._key, text)

    def _tool_calls(self, calls: Any) -> list[StreamEvent] | None:
        """Events for whole tool calls, or None (and nothing started) if any call is malformed."""
        if not isinstance(calls, list) or not all(_well_formed(call) for call in calls):
            return None
        events: list[StreamEvent] = []
        assembler = self.assembler
        for call in calls:
            function = call["function"]
            name = function["name"]
            key = ("tool", self._tool_count)
            self._tool_count += 1
            self._last_kind = "tool"
            provider_id = call.get("id")  # absent on Ollama's native API; some servers add one
            events.append(assembler.tool_start(key, provider_id if isinstance(provider_id, str) else None, name))
            arguments = function.get("arguments")
            if isinstance(arguments, dict):
                events.append(assembler.tool_input(key, orjson.dumps(arguments).decode()))
                assembler.tool_input_object(key, arguments)
            elif isinstance(arguments, str):  # a JSON string from OpenAI-style servers: parsed at the end
                events.append(assembler.tool_input(key, arguments))
            elif arguments is None:
                assembler.tool_input_object(key, {})
            else:
                events.append(assembler.tool_input(key, orjson.dumps(arguments).decode()))
            events.append(assembler.tool_end(key))
        return events

    def _done(self, line: dict[str, Any]) -> list[StreamEvent]:
        assembler = self.assembler
        done_reason = line.get("done_reason")
        raw = assembler.provider_raw
        if done_reason is not None:
            raw["done_reason"] = done_reason
        if "created_at" in line:
            raw["created_at"] = line["created_at"]
        timings = timings_from_ollama(line)
        if timings:
            raw["durations_ns"] = timings
        stop_reason = stop_reason_from_ollama(
            done_reason if isinstance(done_reason, str) else None, has_tool_calls=self._tool_count > 0
        )
        return [assembler.set_usage(usage_from_ollama(line)), *assembler.complete(stop_reason)]


def _well_formed(call: Any) -> bool:
    if not isinstance(call, dict):
        return False
    function = call.get("function")
    if not isinstance(function, dict):
        return False
    name = function.get("name")
    return isinstance(name, str) and bool(name)
