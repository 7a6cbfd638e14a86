"""The OpenAI Responses shape: `POST /v1/responses` in, `response` objects and its typed SSE events out.

Stateless only: `previous_response_id` and `conversation` are refused by the reader (send the whole
conversation in `input`). Text becomes one `message` output item per run of text, tool calls become
`function_call` items, or the client-run item the Responses upstream made (responses_client_items.py);
reasoning is not written (its encrypted form belongs to OpenAI's own calls).
Citations with a URL become the text's `url_citation` annotations (`annotation.added` in a stream).
Stream events carry `sequence_number` and the item/content indexes the SDK's accumulator needs.
"""

from __future__ import annotations

import time
from typing import Any

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.openai_chat.request import compact_json
from metis_core.adapters.openai_responses.request_reader import read_request
from metis_core.gateway.shapes.base import (
    InboundRequest,
    InboundShape,
    StreamWriter,
    cut_short,
    is_output_refusal,
    sse,
)
from metis_core.gateway.shapes.openai_chat import ERROR_TYPES
from metis_core.gateway.shapes.responses_client_items import (
    client_item,
    held_tool_names,
    kept_text_parts,
    with_text_parts,
)
from metis_core.gateway.shapes.url_citations import url_annotations
from metis_core.ids import new_ulid
from metis_core.messages import (
    Citation,
    CitationDelta,
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
)


def usage_body(usage: Usage | None) -> dict[str, Any]:
    usage = usage or Usage()
    return {
        "input_tokens": usage.total_input_tokens, "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "output_tokens": usage.output_tokens, "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_input_tokens + usage.output_tokens,
    }  # fmt: skip


def _text_item(item_id: str, text: str, status: str = "completed",
               cited: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"type": "message", "id": item_id, "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": cited or []}]
            if status == "completed" else []}


def _call_item(item_id: str, call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments,
            "status": status}


class OpenAIResponsesShape(InboundShape):
    name = "openai"
    namespace = "openai_responses"
    id_style = "openai"
    natural_provider = "openai_responses"
    extra_providers = frozenset({"openai_responses"})

    def body_problem(self, body: dict[str, Any]) -> str | None:
        given = body.get("input")
        if isinstance(given, str) and given:
            return None
        if isinstance(given, list) and given and all(isinstance(item, dict) for item in given):
            return None
        return "`input` must be a non-empty string or a non-empty list of input items"

    def read(self, body: dict[str, Any], model_name: str, session_id: str) -> InboundRequest:
        tool_ids = ToolIdMap()
        read = read_request({**body, "model": model_name}, tool_ids=tool_ids, session_id=session_id)
        read.options.extra = {k: v for k, v in read.options.extra.items() if v is not None and k != "store"}
        return InboundRequest(read.messages, read.tools, read.options, tool_ids, stream=bool(body.get("stream")))

    def output(self, message: Message, tool_ids: ToolIdMap) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if is_output_refusal(message):
            item = _text_item(f"msg_{new_ulid()}", "")
            item["content"] = [{"type": "refusal", "refusal": message.text()}]
            return [item]
        # Text blocks in a row are one message item, as a stream writes them (and as OpenAI answers: one
        # output_text a message); each cited block's annotation spans its own part of the joined text.
        # A Responses upstream's `phase` starts a new item where it changes; its logprobs go with their text.
        texts: list[str] = []
        spans: list[tuple[int, int, list[Citation]]] = []
        kept = kept_text_parts(message)
        blocks: list[int] = []
        at = 0

        def close_text() -> None:
            nonlocal at
            if texts:
                item = _text_item(f"msg_{new_ulid()}", "".join(texts), cited=url_annotations(spans, message))
                items.append(with_text_parts(item, [kept.get(index, {}) for index in blocks]))
            texts.clear()
            spans.clear()
            blocks.clear()
            at = 0

        for position, block in enumerate(message.content):
            if isinstance(block, TextBlock) and block.text:
                if blocks and kept.get(blocks[-1], {}).get("phase") != kept.get(position, {}).get("phase"):
                    close_text()
                blocks.append(position)
                if block.citations:
                    spans.append((at, at + len(block.text), list(block.citations)))
                texts.append(block.text)
                at += len(block.text)
            elif isinstance(block, ToolUseBlock):
                close_text()
                call_id = self.client_tool_id(tool_ids, block.id)
                items.append(client_item(message, block.id, call_id, block.name, block.input)
                             or _call_item(f"fc_{new_ulid()}", call_id, block.name, compact_json(block.input)))
        close_text()
        return items

    def response_object(self, response_id: str, model: str, status: str, output: list[dict[str, Any]],
                        usage: Usage | None) -> dict[str, Any]:
        return {
            "id": response_id, "object": "response", "created_at": int(time.time()), "status": status,
            "model": model, "output": output, "usage": usage_body(usage) if status != "in_progress" else None,
            "error": None, "incomplete_details": None, "instructions": None, "metadata": {},
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "temperature": None, "top_p": None,
            "text": {"format": {"type": "text"}},
        }  # fmt: skip

    def response_body(self, message: Message, model: str, tool_ids: ToolIdMap) -> dict[str, Any]:
        status = "incomplete" if cut_short(message) else "completed"
        body = self.response_object(f"resp_{message.id}", model, status, self.output(message, tool_ids),
                                    message.metadata.usage)
        if status == "incomplete":
            body["incomplete_details"] = {"reason": "max_output_tokens"}
        return body

    def stream_writer(self, model: str, tool_ids: ToolIdMap, request: InboundRequest) -> StreamWriter:
        return ResponsesStreamWriter(self, model, tool_ids, held_tool_names(request))

    def error_body(self, status: int, kind: str, message: str) -> dict[str, Any]:
        error_type, code = ERROR_TYPES.get(kind, ("server_error", None))
        return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


class ResponsesStreamWriter(StreamWriter):
    def __init__(self, shape: OpenAIResponsesShape, model: str, tool_ids: ToolIdMap,
                 held_names: frozenset[str] = frozenset()) -> None:
        self.shape = shape
        self.held_names = held_names
        """Tool names whose calls may be client-run items: from the first such call on, events wait for the
        complete answer, which says what item each call is."""
        self.held: list[StreamEvent] | None = None
        self.model = model
        self.tool_ids = tool_ids
        self.response_id = f"resp_{new_ulid()}"
        self.sequence = 0
        self.started = False
        self.output: list[dict[str, Any]] = []
        self.text_item: tuple[int, str, list[str]] | None = None
        """(output index, item id, text so far) of the open message item."""
        self.spans: dict[int, list[int]] = {}
        """canonical text block index -> [start, end] within the open message item's text."""
        self.item_blocks: dict[int, list[int]] = {}
        """output index of a message item -> the canonical text blocks it holds (for phase and logprobs)."""
        self.citations: dict[int, list[Citation]] = {}
        """canonical text block index -> the citations its `citation_delta` events brought."""
        self.calls: dict[int, tuple[int, str, str, str, list[str]]] = {}
        """canonical index -> (output index, item id, call id, name, argument fragments)."""
        self.failed = False

    def _event(self, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return sse(kind, payload)

    def _close_text(self, final: Message | None = None) -> bytes:
        if self.text_item is None:
            return b""
        index, item_id, parts = self.text_item
        self.text_item = None
        text = "".join(parts)
        spans = []
        for canonical, (start, end) in self.spans.items():
            citations = self.citations.get(canonical)
            if citations is None and final is not None and canonical < len(final.content):
                block = final.content[canonical]  # citations the stream did not announce (Gemini's grounding)
                citations = list(block.citations or ()) if isinstance(block, TextBlock) else None
            if citations:
                spans.append((start, end, citations))
        self.spans = {}
        cited = url_annotations(spans, final)
        frames = b"".join(
            self._event("response.output_text.annotation.added", item_id=item_id, output_index=index,
                        content_index=0, annotation_index=position, annotation=annotation)
            for position, annotation in enumerate(cited))
        part = {"type": "output_text", "text": text, "annotations": cited}
        item = _text_item(item_id, text, cited=cited)
        self.output[index] = item
        return frames + (self._event("response.output_text.done", item_id=item_id, output_index=index, content_index=0,
                            text=text, logprobs=[])
                + self._event("response.content_part.done", item_id=item_id, output_index=index, content_index=0,
                              part=part)
                + self._event("response.output_item.done", output_index=index, item=item))  # fmt: skip

    def feed(self, event: StreamEvent) -> bytes:
        if self.failed:
            return b""
        if self.held is None and isinstance(event, ToolUseStart) and event.name in self.held_names:
            self.held = []
        if self.held is not None and not isinstance(event, MessageComplete | StreamError):
            self.held.append(event)
            return self._start() if isinstance(event, ToolUseStart) else b""
        if isinstance(event, MessageComplete) and self.held:
            return self._release(event.message) + self._feed_one(event)
        return self._feed_one(event)

    def _start(self) -> bytes:
        if self.started:
            return b""
        self.started = True
        created = self.shape.response_object(self.response_id, self.model, "in_progress", [], None)
        return self._event("response.created", response=created) + self._event("response.in_progress",
                                                                               response=created)

    def _release(self, final: Message) -> bytes:
        """The events held since the first possibly client-run call, now that the answer says what each is."""
        held, self.held = self.held or [], None
        frames = b""
        whole: set[int] = set()
        for event in held:
            if isinstance(event, ToolUseStart):
                block = next((b for b in final.content if isinstance(b, ToolUseBlock) and b.id == event.id), None)
                call_id = self.shape.client_tool_id(self.tool_ids, event.id)
                item = client_item(final, event.id, call_id, event.name, block.input) if block else None
                if item is not None:
                    whole.add(event.index)
                    frames += self._close_text()
                    index = len(self.output)
                    self.output.append(item)
                    frames += self._event("response.output_item.added", output_index=index, item=item)
                    frames += self._event("response.output_item.done", output_index=index, item=item)
                    continue
            if isinstance(event, ToolUseInputDelta | ToolUseEnd) and event.index in whole:
                continue
            frames += self._feed_one(event)
        return frames

    def _feed_one(self, event: StreamEvent) -> bytes:
        frames = b""
        frames += self._start()
        if isinstance(event, TextDelta):
            if self.text_item is None:
                index, item_id = len(self.output), f"msg_{new_ulid()}"
                self.output.append(_text_item(item_id, "", "in_progress"))
                self.text_item = (index, item_id, [])
                frames += self._event("response.output_item.added", output_index=index,
                                      item=_text_item(item_id, "", "in_progress"))
                frames += self._event("response.content_part.added", item_id=item_id, output_index=index,
                                      content_index=0, part={"type": "output_text", "text": "", "annotations": []})
            index, item_id, parts = self.text_item
            span = self.spans.get(event.index)
            if span is None:  # a new text block within this item starts where the item's text ends
                offset = sum(map(len, parts))
                span = self.spans[event.index] = [offset, offset]
                self.item_blocks.setdefault(index, []).append(event.index)
            span[1] += len(event.text)
            parts.append(event.text)
            frames += self._event("response.output_text.delta", item_id=item_id, output_index=index,
                                  content_index=0, delta=event.text, logprobs=[])
        elif isinstance(event, ToolUseStart):
            frames += self._close_text()
            index, item_id = len(self.output), f"fc_{new_ulid()}"
            call_id = self.shape.client_tool_id(self.tool_ids, event.id)
            self.calls[event.index] = (index, item_id, call_id, event.name, [])
            item = _call_item(item_id, call_id, event.name, "", "in_progress")
            self.output.append(item)
            frames += self._event("response.output_item.added", output_index=index, item=item)
        elif isinstance(event, ToolUseInputDelta) and event.index in self.calls:
            index, item_id, _, _, fragments = self.calls[event.index]
            fragments.append(event.partial_json)
            frames += self._event("response.function_call_arguments.delta", item_id=item_id, output_index=index,
                                  delta=event.partial_json)
        elif isinstance(event, ToolUseEnd) and event.index in self.calls:
            index, item_id, call_id, name, fragments = self.calls[event.index]
            arguments = "".join(fragments) or compact_json(event.input)
            if not fragments:
                frames += self._event("response.function_call_arguments.delta", item_id=item_id, output_index=index,
                                      delta=arguments)
            item = _call_item(item_id, call_id, name, arguments)
            self.output[index] = item
            frames += self._event("response.function_call_arguments.done", item_id=item_id, output_index=index,
                                  name=name, arguments=arguments)
            frames += self._event("response.output_item.done", output_index=index, item=item)
        elif isinstance(event, CitationDelta):
            self.citations.setdefault(event.index, []).append(event.citation)
        elif isinstance(event, StreamError):
            frames += self.fail(502, "overloaded" if event.retryable else "upstream", event.message)
        elif isinstance(event, MessageComplete):
            frames += self._close_text(event.message)
            final = event.message
            kept = kept_text_parts(final)
            for index, held_blocks in self.item_blocks.items():  # the upstream's phase and logprobs, now known
                self.output[index] = with_text_parts(self.output[index], [kept.get(b, {}) for b in held_blocks])
            status = "incomplete" if cut_short(final) else "completed"
            body = self.shape.response_object(self.response_id, self.model, status, self.output,
                                              final.metadata.usage)
            if status == "incomplete":
                body["incomplete_details"] = {"reason": "max_output_tokens"}
                return frames + self._event("response.incomplete", response=body)
            frames += self._event("response.completed", response=body)
        return frames

    def fail(self, status: int, kind: str, message: str) -> bytes:
        self.failed = True
        body = self.shape.response_object(self.response_id, self.model, "failed", self.output, None)
        body["error"] = {"code": "server_error", "message": message}
        return self._event("response.failed", response=body)
