"""Responses API semantic SSE events -> canonical StreamEvents, through the shared MessageAssembler.

Blocks are keyed by `output_index` (text also by `content_index`), so parallel function calls
never merge; `sequence_number` is not needed (2025-05 recordings lack it). Terminal events are
`response.completed`, `response.incomplete` and `response.failed`; an `error` event ends the
stream too. The terminal response carries the full output: it supplies the final encrypted
reasoning (re-encrypted per serialization) and anything a stream delivered only whole, matched to
the streamed items by item id (never by list position), so the final Message equals the
non-streaming one. Hosted-tool and client-run items arrive whole at output_item.done. No HTTP here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.base import RequestContext, StreamTranslator
from metis_core.adapters.openai_responses import client_tools, hosted
from metis_core.adapters.openai_responses.errors import error_class_for
from metis_core.adapters.openai_responses.raw import API, SUMMARY_SEPARATOR, RawRecord
from metis_core.adapters.openai_responses.response import (
    add_annotations,
    add_output_item,
    end_response,
    part_text,
    reasoning_texts,
    text_key,
)
from metis_core.adapters.openai_responses.usage import usage_from_responses
from metis_core.errors import RETRYABLE_CLASSES, ErrorClass
from metis_core.messages import StreamEvent, ToolUseEnd
from metis_core.transport.framing import WireChunk

TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
UNSTREAMED_KEY_BASE = 1_000_000
"""Assembler keys of items only the terminal response held, apart from streamed output indexes."""


@dataclass(slots=True)
class _Reasoning:
    item_id: str | None = None
    part_lengths: list[int] = field(default_factory=list)
    summary_index: int | None = None
    streamed: bool = False
    signature: str | None = None


class ResponsesStreamTranslator(StreamTranslator):
    def __init__(self, context: RequestContext) -> None:
        self.assembler = MessageAssembler(context, api=API)
        self.record = RawRecord()
        self._reasoning: dict[int, _Reasoning] = {}
        self._streamed_text: set[tuple[str, int, int]] = set()
        self._streamed_args: set[int] = set()
        self._ended_tools: set[int] = set()
        self._custom_input: dict[int, list[str]] = {}
        self._kinds: dict[int, str] = {}
        self._seen_ids: set[str] = set()
        self._done_texts: dict[int, list[Any]] = {}
        """output_index -> the part texts of the message item done there, to know it again in the terminal
        response under another id (some proxies, e.g. GitHub Copilot's, rotate item ids per event)."""
        self._hosted_keys: dict[str, int] = {}
        """Item id -> assembler key of each hosted item, so the terminal copy can replace it."""
        self._done = False
        self._handlers = {
            "response.created": self._created,
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done,
            "response.output_text.delta": self._text_delta,
            "response.refusal.delta": self._refusal_delta,
            "response.output_text.done": self._text_done,
            "response.refusal.done": self._text_done,
            "response.function_call_arguments.delta": self._arguments_delta,
            "response.function_call_arguments.done": self._arguments_done,
            "response.custom_tool_call_input.delta": self._custom_delta,
            "response.custom_tool_call_input.done": self._custom_done,
            "response.reasoning_summary_text.delta": self._summary_delta,
            "response.reasoning_summary_text.done": self._summary_done,
            "error": self._error,
            **dict.fromkeys(TERMINAL_EVENTS, self._terminal),
        }
        """Each event type's handler, the terminal ones included: one lookup per event finds any of them."""

    # --- feeding -------------------------------------------------------------------------------

    def feed(self, chunk: WireChunk) -> list[StreamEvent]:
        data = chunk.data
        if self._done or not data or data == "[DONE]":
            return []
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            return self._fail(ErrorClass.OTHER, f"stream event is not JSON: {data[:200]!r}")
        if type(event) is not dict:  # orjson makes exact dicts
            return self._fail(ErrorClass.OTHER, f"stream event is not an object: {data[:200]!r}")
        kind: Any = event.get("type") or chunk.event  # a type that names no handler is skipped
        handler = self._handlers.get(kind)
        return handler(event) if handler is not None else []

    def finish(self) -> list[StreamEvent]:
        if self._done:
            return []
        self._flush_signatures()
        return self._fail(
            ErrorClass.NETWORK,
            "the stream ended before response.completed; the answer may be cut off, retry the request",
            retryable=True,
        )

    def _fail(self, error_class: ErrorClass, message: str, *, retryable: bool = False) -> list[StreamEvent]:
        self._done = True
        self.assembler.provider_raw.update(self.record.as_provider_raw())
        return self.assembler.fail(error_class.value, message, retryable=retryable)

    def _created(self, event: dict[str, Any]) -> list[StreamEvent]:
        response = event.get("response")
        if isinstance(response, dict):
            self.record.set_response(response)  # so even a cut-off stream names its response id
        return []

    # --- items -----------------------------------------------------------------------------------

    def _item_added(self, event: dict[str, Any]) -> list[StreamEvent]:
        item = event.get("item")
        position = event.get("output_index")
        if not isinstance(item, dict) or not isinstance(position, int):
            return []
        kind = item.get("type")
        self._kinds[position] = kind if isinstance(kind, str) else ""
        if isinstance(item.get("id"), str):
            self._seen_ids.add(item["id"])
        if kind in ("function_call", "custom_tool_call"):
            name = item.get("name")
            call_id = item.get("call_id")
            if not isinstance(name, str) or not name:
                return []  # announced without a name: taken whole from output_item.done
            start = self.assembler.tool_start(position, call_id if isinstance(call_id, str) else None, name)
            self.record.add_namespace(start.id, item)
            if kind == "custom_tool_call":
                self._custom_input[position] = []
                self.record.custom_tool_calls.append(start.id)
            return [start]
        if kind == "reasoning":
            item_id = item.get("id")
            self._reasoning[position] = _Reasoning(item_id=item_id if isinstance(item_id, str) else None)
        if hosted.is_hosted(kind) and not client_tools.is_client_call(item):
            # held where it was announced: some items are finished only in the terminal response
            # (a client-run call is a tool call, read whole from its output_item.done)
            self._hold_hosted(position, item)
        return []

    def _hold_hosted(self, position: int, item: dict[str, Any]) -> None:
        add_output_item(self.assembler, self.record, position, item)  # whole: never a client call
        if isinstance(item.get("id"), str):
            self._hosted_keys[item["id"]] = position

    def _item_done(self, event: dict[str, Any]) -> list[StreamEvent]:
        item = event.get("item")
        position = event.get("output_index")
        if not isinstance(item, dict) or not isinstance(position, int):
            return []
        kind = item.get("type")
        if isinstance(item.get("id"), str):
            self._seen_ids.add(item["id"])
        self._kinds.setdefault(position, kind if isinstance(kind, str) else "")
        if client_tools.is_client_call(item):
            if self.assembler.has_tool(position):
                return []
            call_id, tool_name, tool_input = client_tools.call_input(item, position)  # whole: no deltas
            start = self.assembler.tool_start(position, call_id, tool_name)
            self.assembler.tool_input_object(position, tool_input)
            self.record.client_calls[start.id] = dict(item)
            return [start, self.assembler.tool_end(position)]
        if hosted.is_hosted(kind):
            self._hold_hosted(position, item)  # the finished copy replaces the announced one
            return []
        if kind == "message":
            return self._message_done(position, item)
        if kind == "reasoning":
            return self._reasoning_done(position, item)
        if kind == "function_call":
            if position in self._ended_tools:
                return []
            if not self.assembler.has_tool(position):
                add_output_item(self.assembler, self.record, position, item)
                self._ended_tools.add(position)
                return []
            arguments = item.get("arguments")
            return self._end_call(position, arguments if isinstance(arguments, str) else "")
        if kind == "custom_tool_call":
            if not self.assembler.has_tool(position):
                add_output_item(self.assembler, self.record, position, item)
                self._ended_tools.add(position)
                return []
            return self._custom_done({"output_index": position, "input": item.get("input")})
        if isinstance(kind, str):
            self.record.unhandled_items.append(kind)
        return []

    def _message_done(self, position: int, item: dict[str, Any]) -> list[StreamEvent]:
        self._done_texts[position] = _part_texts(item)
        events: list[StreamEvent] = []
        for index, part in enumerate(item.get("content") or ()):
            key = text_key(position, index)
            if key not in self._streamed_text:
                text = part_text(part, self.record)
                if text:
                    self._streamed_text.add(key)
                    events.append(self.assembler.text(key, text))
        add_annotations(self.assembler, position, item)
        self.record.add_message([text_key(position, i) for i in range(len(item.get("content") or ()))], item)
        return events

    # --- text ------------------------------------------------------------------------------------

    def _text_delta(self, event: dict[str, Any]) -> list[StreamEvent]:
        get = event.get
        position, index, delta = get("output_index"), get("content_index", 0), get("delta")
        if not isinstance(position, int) or not isinstance(index, int) or not isinstance(delta, str) or not delta:
            return []
        key = ("text", position, index)  # text_key(position, index), built here: this runs for every delta
        self._streamed_text.add(key)
        return [self.assembler.text(key, delta)]

    def _refusal_delta(self, event: dict[str, Any]) -> list[StreamEvent]:
        self.record.refusal = True
        return self._text_delta(event)

    def _text_done(self, event: dict[str, Any]) -> list[StreamEvent]:
        key = self._text_key(event)
        text = event.get("text", event.get("refusal"))
        if key is None or key in self._streamed_text or not isinstance(text, str) or not text:
            return []
        if event.get("type") == "response.refusal.done":
            self.record.refusal = True
        self._streamed_text.add(key)
        return [self.assembler.text(key, text)]

    @staticmethod
    def _text_key(event: dict[str, Any]) -> tuple[str, int, int] | None:
        position, index = event.get("output_index"), event.get("content_index", 0)
        if not isinstance(position, int) or not isinstance(index, int):
            return None
        return text_key(position, index)

    # --- tool calls ------------------------------------------------------------------------------

    def _arguments_delta(self, event: dict[str, Any]) -> list[StreamEvent]:
        position = event.get("output_index")
        delta = event.get("delta")
        if not isinstance(position, int) or not isinstance(delta, str) or not self.assembler.has_tool(position):
            return []
        self._streamed_args.add(position)
        return [self.assembler.tool_input(position, delta)]

    def _arguments_done(self, event: dict[str, Any]) -> list[StreamEvent]:
        position = event.get("output_index")
        arguments = event.get("arguments")
        if not isinstance(position, int) or not self.assembler.has_tool(position) or position in self._ended_tools:
            return []
        return self._end_call(position, arguments if isinstance(arguments, str) else "")

    def _end_call(self, position: int, arguments: str) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if position not in self._streamed_args and arguments:
            events.append(self.assembler.tool_input(position, arguments))
            self._streamed_args.add(position)
        end = self.assembler.tool_end(position)
        self._ended_tools.add(position)
        if isinstance(end, ToolUseEnd):
            self.record.add_arguments(end.id, arguments, end.input)
        events.append(end)
        return events

    def _custom_delta(self, event: dict[str, Any]) -> list[StreamEvent]:
        position = event.get("output_index")
        delta = event.get("delta")
        if isinstance(position, int) and isinstance(delta, str) and position in self._custom_input:
            self._custom_input[position].append(delta)
        return []  # a custom call's input is free text, not JSON: it surfaces whole at tool_use_end

    def _custom_done(self, event: dict[str, Any]) -> list[StreamEvent]:
        position = event.get("output_index")
        if not isinstance(position, int) or position in self._ended_tools or not self.assembler.has_tool(position):
            return []
        raw_input = event.get("input")
        if not isinstance(raw_input, str):
            raw_input = "".join(self._custom_input.get(position, ()))
        self.assembler.tool_input_object(position, {"input": raw_input})
        self._ended_tools.add(position)
        return [self.assembler.tool_end(position)]

    # --- reasoning -------------------------------------------------------------------------------

    def _summary_delta(self, event: dict[str, Any]) -> list[StreamEvent]:
        position, delta = event.get("output_index"), event.get("delta")
        if not isinstance(position, int) or not isinstance(delta, str):
            return []
        state = self._reasoning.setdefault(position, _Reasoning())
        state.streamed = True
        return self._summary_text(position, state, event.get("summary_index", 0), delta)

    def _summary_done(self, event: dict[str, Any]) -> list[StreamEvent]:
        position, text = event.get("output_index"), event.get("text")
        if not isinstance(position, int) or not isinstance(text, str):
            return []
        state = self._reasoning.setdefault(position, _Reasoning())
        summary_index = event.get("summary_index", 0)
        if state.summary_index == summary_index or not text:
            return []  # already streamed as deltas
        state.streamed = True
        return self._summary_text(position, state, summary_index, text)

    def _summary_text(self, position: int, state: _Reasoning, summary_index: Any, text: str) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if state.summary_index != summary_index:
            if state.part_lengths:
                events.append(self.assembler.thinking(position, SUMMARY_SEPARATOR))
            state.part_lengths.append(0)
            state.summary_index = summary_index
        state.part_lengths[-1] += len(text)
        events.append(self.assembler.thinking(position, text))
        return events

    def _reasoning_done(self, position: int, item: dict[str, Any]) -> list[StreamEvent]:
        state = self._reasoning.setdefault(position, _Reasoning())
        if state.item_id is None and isinstance(item.get("id"), str):
            state.item_id = item["id"]
        events: list[StreamEvent] = []
        from_content = False
        if not state.streamed:
            texts, from_content = reasoning_texts(item)
            for index, text in enumerate(texts):
                events.extend(self._summary_text(position, state, index, text))
        signature = item.get("encrypted_content")
        if isinstance(signature, str):
            state.signature = signature
        has_block = state.streamed or bool(state.part_lengths) or state.signature is not None
        if has_block and not state.part_lengths:
            self.assembler.thinking(position, "")  # an empty but signed block keeps its place in order
        self.record.add_reasoning(state.item_id, has_block, list(state.part_lengths), from_content)
        state.streamed = True
        return events

    def _flush_signatures(self) -> None:
        for position, state in self._reasoning.items():
            if state.signature is not None:
                self.assembler.thinking_signature(position, state.signature)
                state.signature = None

    # --- endings ---------------------------------------------------------------------------------

    def _terminal(self, event: dict[str, Any]) -> list[StreamEvent]:
        response = event.get("response")
        if not isinstance(response, dict):
            return self._fail(ErrorClass.OTHER, f"{event.get('type')} event carries no response object")
        by_id = {state.item_id: state for state in self._reasoning.values() if state.item_id is not None}
        for position, item in enumerate(response.get("output") or ()):
            if not isinstance(item, dict):
                continue
            item_id = item.get("id")
            if item.get("type") == "reasoning":
                signature = item.get("encrypted_content")
                state = by_id[item_id] if item_id in by_id else self._reasoning.get(position)
                if isinstance(signature, str) and state is not None:
                    state.signature = signature  # the terminal copy is what the non-streaming body holds
            elif isinstance(item_id, str) and item_id in self._hosted_keys:
                # the terminal copy is what a non-streaming body holds (encrypted payloads differ per copy)
                self.assembler.hosted(self._hosted_keys[item_id], dict(item), hosted.build_item)
            elif isinstance(item_id, str) and item_id in self._seen_ids:
                continue  # streamed already: matched by id, whatever its position in this list
            elif item_id is None and position in self._kinds:
                continue  # no id to match by (older recordings): its output_index was streamed
            elif item.get("type") == "message" and self._done_texts.get(position) == _part_texts(item):
                continue  # the message done at this index, under a rotated id: the same text, never twice
            else:
                # never streamed at all: keyed past every output_index so it can merge with nothing
                add_output_item(self.assembler, self.record, UNSTREAMED_KEY_BASE + position, item)
        self._flush_signatures()
        self._done = True
        usage = self.assembler.set_usage(usage_from_responses(response.get("usage")))
        return [usage, *end_response(self.assembler, self.record, response)]

    def _error(self, event: dict[str, Any]) -> list[StreamEvent]:
        nested = event.get("error")
        error: dict[str, Any] = nested if isinstance(nested, dict) else event
        code = error.get("code")
        message = error.get("message")
        text = message if isinstance(message, str) and message else f"the stream reported an error ({code})"
        error_class = error_class_for(code if isinstance(code, str) else None, text)
        self._flush_signatures()
        return self._fail(error_class, text, retryable=error_class in RETRYABLE_CLASSES)


def _part_texts(item: dict[str, Any]) -> list[Any]:
    return [part.get("text", part.get("refusal")) if isinstance(part, dict) else None
            for part in item.get("content") or ()]
