"""Chat Completions SSE chunks -> canonical stream events.

`ChatStreamTranslator` applies `choices[0].delta` objects to a MessageAssembler (a dialect's
non-streaming body is applied as one delta; Chat Completions' own body is read by response.py, whose
finish-reason, argument and citation helpers this module uses, so a body and its stream give one Message).
Rules: tool-call fragments are grouped by `index` AND `id` (a new id at a used index starts a new
call, so parallel calls never merge); arguments surface whole at `tool_use_end`; only choice 0 is
kept when n>1; `usage` comes from the final chunk (`choices: []`), and `"usage": null` on the other
chunks is ignored; an `error` object inside the stream ends it with an error event. It does not
frame SSE (transport/framing.py does).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import orjson

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.base import RequestContext, StreamTranslator
from metis_core.adapters.openai_chat.request import CUSTOM_CALLS_KEY, RAW_ARGUMENTS_KEY, REFUSAL_KEY
from metis_core.adapters.openai_chat.response import API, chat_stop_reason, parse_arguments, url_citation
from metis_core.adapters.openai_chat.usage import usage_from_chat
from metis_core.errors import ErrorClass
from metis_core.messages import Message, MessageComplete, StreamError, StreamEvent

if TYPE_CHECKING:
    from metis_core.transport.framing import WireChunk

log = logging.getLogger("metis_core.adapters.openai_chat")

class _Call:
    """One tool call being streamed: its assembler key, ids and the raw argument fragments."""

    __slots__ = ("closed", "custom", "key", "parts", "provider_id", "tool_id")

    def __init__(self, key: Hashable, provider_id: str | None, custom: bool) -> None:
        self.key = key
        self.provider_id = provider_id
        self.custom = custom
        self.tool_id = ""
        self.parts: list[str] = []
        self.closed = False


class ChatStreamTranslator(StreamTranslator):
    api = API

    assembler_class: type[MessageAssembler] = MessageAssembler

    def __init__(self, context: RequestContext) -> None:
        self.context = context
        self.asm = self.assembler_class(context, api=self.api)
        self.raw = self.asm.provider_raw
        self._calls: dict[int, _Call] = {}
        self._all_calls: list[_Call] = []
        self._finish_reason: str | None = None
        self._refused = False
        self._unparsed: str | None = None
        self.ignored_choices: set[int] = set()

    # --- stream entry points -------------------------------------------------------------------

    def feed(self, chunk: WireChunk) -> list[StreamEvent]:
        data = chunk.data
        if not data or self.asm.finished:
            return []
        if self._unparsed is not None:  # a broken chunk with more after it: the server sent garbage
            return self.asm.fail(ErrorClass.OTHER.value, f"stream chunk is not JSON: {self._unparsed[:200]!r}")
        if data == "[DONE]":
            return self.complete_events()
        try:
            payload = orjson.loads(data)
        except orjson.JSONDecodeError:
            # Judged by what follows: another chunk means garbage, the end of the body a cut-off.
            self._unparsed = data
            return []
        if not isinstance(payload, dict):
            return self.asm.fail(ErrorClass.OTHER.value, f"stream chunk is not a JSON object: {data[:200]!r}")
        return self.apply_chunk(payload)

    def finish(self) -> list[StreamEvent]:
        if self.asm.finished:
            return []
        if self._unparsed is not None:
            return self.asm.fail(
                ErrorClass.NETWORK.value,
                f"stream was cut off inside an event: {self._unparsed[-120:]!r}",
                retryable=True,
            )
        if self._finish_reason is not None:
            log.debug("stream ended after finish_reason without [DONE]; treating it as complete")
            return self.complete_events()
        return self.asm.fail(
            ErrorClass.NETWORK.value,
            "stream ended before a finish_reason or [DONE] arrived (connection dropped or body cut off)",
            retryable=True,
        )

    # --- chunk and delta handling (shared with the non-streaming parser) -------------------------

    def apply_chunk(self, payload: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if "id" in payload and "response_id" not in self.raw:
            self.note_response(payload)
        for choice in payload.get("choices") or ():
            index = choice.get("index", 0)
            if index != 0:
                self.ignored_choices.add(index)
                continue
            delta = choice.get("delta")
            if delta:
                events.extend(self.apply_delta(delta))
            reason = choice.get("finish_reason")
            if reason:
                events.extend(self.apply_finish_reason(reason))
        usage = payload.get("usage")
        if usage:
            events.append(self.apply_usage(usage))
        if "error" in payload and payload["error"] and isinstance(payload["error"], dict):
            events.extend(self.apply_error(payload["error"]))
        return events

    def note_response(self, payload: dict[str, Any]) -> None:
        self.raw["response_id"] = payload["id"]
        if payload.get("model"):
            self.raw["served_model"] = payload["model"]

    def apply_message(self, message: dict[str, Any]) -> None:
        """A whole non-streaming `message`: applied as one delta."""
        self.apply_delta(message)

    def apply_delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        content = delta.get("content")
        if content:
            if isinstance(content, list):  # some servers send content parts even in deltas
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            if content:
                events.append(self.asm.text("text", content))
        # The keys below are missing from most deltas: tested with `in` first, cheaper than .get per delta.
        if "refusal" in delta and (refusal := delta["refusal"]):
            self._refused = True
            self.raw[REFUSAL_KEY] = self.raw.get(REFUSAL_KEY, "") + refusal
            events.append(self.asm.text("refusal", refusal))
        # a search model's url_citations (a stream sends them in one chunk)
        if "annotations" in delta and (annotations := delta["annotations"]) and isinstance(annotations, list):
            events.extend(self.asm.citation("text", url_citation(a, self.asm.origin)) for a in annotations
                          if isinstance(a, dict) and a.get("type") == "url_citation")
        if "tool_calls" in delta and (tool_calls := delta["tool_calls"]):
            for position, call in enumerate(tool_calls):
                events.extend(self.apply_tool_call(position, call))
        return events

    def apply_tool_call(self, position: int, call: dict[str, Any]) -> list[StreamEvent]:
        index = call.get("index", position)
        provider_id = call.get("id") or None
        kind = call.get("type")  # Snowflake sends an empty `custom` beside every `function`
        custom = kind == "custom" if kind else "custom" in call and "function" not in call
        body = call.get("custom" if custom else "function") or {}
        current = self._calls.get(index)
        events: list[StreamEvent] = []
        if current is None or (provider_id is not None and current.provider_id not in (None, provider_id)):
            current = _Call(("tool", len(self._all_calls)), provider_id, custom)
            self._calls[index] = current
            self._all_calls.append(current)
            start = self.asm.tool_start(current.key, provider_id, body.get("name") or "")
            current.tool_id = start.id
            events.append(start)
        elif provider_id is not None and current.provider_id is None:
            current.provider_id = provider_id
        fragment = body.get("input" if custom else "arguments")
        if fragment:
            current.parts.append(fragment)
            if not custom:
                events.append(self.asm.tool_input(current.key, fragment))
        return events

    def apply_finish_reason(self, reason: str) -> list[StreamEvent]:
        """Close every open call now, so each tool's whole input is known before usage and [DONE]."""
        self._finish_reason = reason
        self.raw["finish_reason"] = reason
        events: list[StreamEvent] = []
        for call in self._all_calls:
            events.extend(self._close_call(call))
        self._calls.clear()
        return events

    def _close_call(self, call: _Call) -> list[StreamEvent]:
        if call.closed:
            return []
        call.closed = True
        raw = "".join(call.parts)
        if call.custom:
            self.asm.tool_input_object(call.key, {"input": raw})
            self.raw.setdefault(CUSTOM_CALLS_KEY, []).append(call.tool_id)
        elif raw.strip():
            parsed, verbatim = parse_arguments(raw)  # None: tool_end below reports the broken arguments
            if parsed is not None:
                self.asm.tool_input_object(call.key, parsed)  # parsed once: tool_end takes it as is
                if verbatim:
                    self.raw.setdefault(RAW_ARGUMENTS_KEY, {})[call.tool_id] = raw
        return [self.asm.tool_end(call.key)]

    def apply_usage(self, usage: dict[str, Any]) -> StreamEvent:
        return self.asm.set_usage(usage_from_chat(usage))

    def apply_error(self, error: dict[str, Any]) -> list[StreamEvent]:
        from metis_core.adapters.openai_chat.errors import provider_error  # error objects only

        failure = provider_error(error, provider=self.context.provider, status=None)
        self.raw["stream_error"] = {"code": error.get("code"), "message": failure.detail}
        return self.asm.fail(failure.error_class.value, str(failure), retryable=failure.retryable)

    # --- endings -------------------------------------------------------------------------------

    def stop_reason(self) -> str:
        return chat_stop_reason(self._finish_reason, self._refused)

    def complete_events(self) -> list[StreamEvent]:
        if self.ignored_choices:
            self.raw["ignored_choices"] = len(self.ignored_choices)
        events: list[StreamEvent] = []
        for call in self._all_calls:
            events.extend(self._close_call(call))
        events.extend(self.asm.complete(self.stop_reason()))
        return events

    def final_message(self) -> Message:
        """For the non-streaming parser: complete and return the assembled message."""
        for event in self.complete_events():
            if isinstance(event, MessageComplete):
                message: Message = event.message
                return message
            if isinstance(event, StreamError):
                log.warning("response for %s is incomplete: %s", self.context.model, event.message)
        raise RuntimeError("assembler produced no final message")  # pragma: no cover - complete() always does
