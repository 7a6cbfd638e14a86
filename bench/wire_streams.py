"""Streamed responses in each provider's exact wire format: a list of framed events per provider.

Every stream carries STREAM_EVENTS data events: text fragments, one tool call (its JSON in
TOOL_FRAGMENTS pieces where the API streams arguments; Gemini and Ollama send a call whole) and
usage, framed as the provider frames them (`event:` lines, CRLF for Gemini, `[DONE]`, NDJSON).
The server sends each event as its own HTTP chunk, as a live server flushes them.
"""

from __future__ import annotations

import json
from typing import Any

from bench.scenarios import ANTHROPIC_MODEL, OLLAMA_MODEL, OPENAI_MODEL, STREAM_EVENTS, StreamScript
from bench.wire_bodies import (
    ANSWER_CALL,
    CREATED,
    gemini_usage,
    ollama_final_fields,
    openai_usage,
    responses_object,
    responses_usage,
)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _sse(data: Any, event: str | None = None, newline: str = "\n") -> bytes:
    head = f"event: {event}{newline}" if event else ""
    return f"{head}data: {_json(data)}{newline}{newline}".encode()


def anthropic_stream(script: StreamScript) -> list[bytes]:
    answer = script.answer
    fixed = 7
    events = [
        _sse({"type": "message_start", "message": {
            "model": f"{ANTHROPIC_MODEL}-20250929", "id": "msg_01BenchAnthropicStream01", "type": "message",
            "role": "assistant", "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": answer.input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 1, "service_tier": "standard"}}},
            "message_start"),
        _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
             "content_block_start"),
    ]
    for piece in script.text_fragments(STREAM_EVENTS - len(script.tool_fragments) - fixed):
        events.append(_sse({"type": "content_block_delta", "index": 0,
                            "delta": {"type": "text_delta", "text": piece}}, "content_block_delta"))
    events.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    events.append(_sse({"type": "content_block_start", "index": 1, "content_block": {
        "type": "tool_use", "id": f"toolu_{ANSWER_CALL}", "name": answer.tool_name, "input": {}}},
        "content_block_start"))
    for piece in script.tool_fragments:
        events.append(_sse({"type": "content_block_delta", "index": 1,
                            "delta": {"type": "input_json_delta", "partial_json": piece}}, "content_block_delta"))
    events.append(_sse({"type": "content_block_stop", "index": 1}, "content_block_stop"))
    events.append(_sse({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                        "usage": {"input_tokens": answer.input_tokens, "cache_creation_input_tokens": 0,
                                  "cache_read_input_tokens": 0, "output_tokens": answer.output_tokens}},
                       "message_delta"))
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


def openai_chat_stream(script: StreamScript, model: str = OPENAI_MODEL, *, comment: bool = False) -> list[bytes]:
    """Chat Completions with `stream_options.include_usage`; OpenRouter adds a processing comment."""
    answer = script.answer
    fixed = 5

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({"id": "chatcmpl-BenchOpenAIChatStream01", "object": "chat.completion.chunk",
                     "created": CREATED, "model": f"{model}-2024-08-06", "service_tier": "default",
                     "system_fingerprint": "fp_bench01",
                     "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                     "usage": None})

    events = [b": OPENROUTER PROCESSING\n\n"] if comment else []
    events.append(chunk({"role": "assistant", "content": "", "refusal": None}))
    for piece in script.text_fragments(STREAM_EVENTS - len(script.tool_fragments) - fixed):
        events.append(chunk({"content": piece}))
    events.append(chunk({"tool_calls": [{"index": 0, "id": f"call_{ANSWER_CALL}", "type": "function",
                                         "function": {"name": answer.tool_name, "arguments": ""}}]}))
    for piece in script.tool_fragments:
        events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    events.append(chunk({}, "tool_calls"))
    events.append(_sse({"id": "chatcmpl-BenchOpenAIChatStream01", "object": "chat.completion.chunk",
                        "created": CREATED, "model": f"{model}-2024-08-06", "service_tier": "default",
                        "system_fingerprint": "fp_bench01", "choices": [], "usage": openai_usage(answer)}))
    events.append(b"data: [DONE]\n\n")
    return events


def openai_responses_stream(script: StreamScript) -> list[bytes]:
    answer = script.answer
    fixed = 11
    text_count = STREAM_EVENTS - len(script.tool_fragments) - fixed
    seq = 0

    def ev(kind: str, **fields: Any) -> bytes:
        nonlocal seq
        seq += 1
        return _sse({"type": kind, "sequence_number": seq, **fields}, kind)

    message_item = {"id": "msg_bench0001", "type": "message", "status": "in_progress", "role": "assistant",
                    "content": []}
    call_item = {"id": "fc_bench0001", "type": "function_call", "status": "in_progress", "arguments": "",
                 "call_id": f"call_{ANSWER_CALL}", "name": answer.tool_name}
    text_part = {"type": "output_text", "text": answer.text, "annotations": [], "logprobs": []}
    events = [
        ev("response.created", response=responses_object(answer, status="in_progress", output=[])),
        ev("response.in_progress", response=responses_object(answer, status="in_progress", output=[])),
        ev("response.output_item.added", output_index=0, item=message_item),
        ev("response.content_part.added", item_id="msg_bench0001", output_index=0, content_index=0,
           part={"type": "output_text", "text": "", "annotations": [], "logprobs": []}),
    ]
    for piece in script.text_fragments(text_count):
        events.append(ev("response.output_text.delta", item_id="msg_bench0001", output_index=0, content_index=0,
                         delta=piece, logprobs=[]))
    events.append(ev("response.output_text.done", item_id="msg_bench0001", output_index=0, content_index=0,
                     text=answer.text, logprobs=[]))
    events.append(ev("response.content_part.done", item_id="msg_bench0001", output_index=0, content_index=0,
                     part=text_part))
    done_message = {**message_item, "status": "completed", "content": [text_part]}
    events.append(ev("response.output_item.done", output_index=0, item=done_message))
    events.append(ev("response.output_item.added", output_index=1, item=call_item))
    for piece in script.tool_fragments:
        events.append(ev("response.function_call_arguments.delta", item_id="fc_bench0001", output_index=1,
                         delta=piece))
    events.append(ev("response.function_call_arguments.done", item_id="fc_bench0001", output_index=1,
                     arguments=script.tool_json))
    done_call = {**call_item, "status": "completed", "arguments": script.tool_json}
    events.append(ev("response.output_item.done", output_index=1, item=done_call))
    final = responses_object(answer, output=[done_message, done_call])
    final["usage"] = responses_usage(answer)
    events.append(ev("response.completed", response=final))
    return events


def gemini_stream(script: StreamScript) -> list[bytes]:
    """`streamGenerateContent?alt=sse`: CRLF framing, no event names, the call arrives whole."""
    answer = script.answer

    def chunk(parts: list[dict[str, Any]], **extra: Any) -> bytes:
        body = {"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0, **extra}],
                "modelVersion": "gemini-2.5-flash", "responseId": "BenchGeminiStream01"}
        if "finishReason" in extra:
            body["usageMetadata"] = gemini_usage(answer)
        return _sse(body, newline="\r\n")

    events = [chunk([{"text": piece}]) for piece in script.text_fragments(STREAM_EVENTS - 2)]
    events.append(chunk([{"functionCall": {"name": answer.tool_name, "args": answer.tool_args}}]))
    events.append(chunk([{"text": ""}], finishReason="STOP"))
    return events


def ollama_stream(script: StreamScript) -> list[bytes]:
    """`/api/chat` NDJSON: one compact object per line; the call arrives whole, usage on `done`."""
    answer = script.answer

    def line(message: dict[str, Any], **extra: Any) -> bytes:
        body = {"model": OLLAMA_MODEL, "created_at": "2026-01-01T00:00:00.000000Z",
                "message": {"role": "assistant", **message}, **extra}
        return (_json(body) + "\n").encode()

    events = [line({"content": piece}, done=False) for piece in script.text_fragments(STREAM_EVENTS - 2)]
    events.append(line({"content": "", "tool_calls": [
        {"function": {"name": answer.tool_name, "arguments": answer.tool_args}}]}, done=False))
    events.append(line({"content": ""}, **ollama_final_fields(answer)))
    return events
