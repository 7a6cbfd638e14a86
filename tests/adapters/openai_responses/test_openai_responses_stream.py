"""Responses API SSE streams -> canonical events: every recording, stream == non-stream, broken streams."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from adapters.openai_responses.responses_oracle import PROVIDER
from fixture_files import plain_wire_files, read_bytes

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.messages import (
    Message,
    MessageComplete,
    MessageStatus,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseEnd,
    ToolUseInputDelta,
    ToolUseStart,
    UsageUpdate,
    user_message,
)
from metis_core.transport.framing import SSEDecoder, WireChunk, decode_all
from metis_core.transport.wire import WireResponse

ADAPTER = OpenAIResponsesAdapter()
STREAMS = [p.name for p in plain_wire_files(PROVIDER, "stream")]

# name -> (block types, text, (tool name, input) or None, (input, output, cached, reasoning), stop reason)
EXPECTED: dict[str, tuple[list[str], str, tuple[str, dict[str, Any]] | None, tuple[int, ...], str]] = {
    "stream__cached_tokens_usage.sse": (["text"], "2, 3, 4", None, (125, 8, 1390, 0), "end_turn"),
    "stream__function_call_arguments_delta.sse": (
        ["tool_use"],
        "",
        ("get_current_weather", {"location": "Boston, MA", "unit": "celsius"}),
        (75, 23, 0, 0),
        "tool_use",
    ),
    "stream__function_call_reasoning_usage.sse": (
        ["thinking", "tool_use"],
        "",
        ("final_result", {"result": 6666}),
        (53, 469, 0, 448),
        "tool_use",
    ),
    "stream__incomplete_max_output_tokens.sse": (
        ["text"],
        "In the bustling city of Detroit, a sleek, metallic blue sedan rolled off the",
        None,
        (0, 0, 0, 0),
        "max_tokens",
    ),
    "stream__reasoning_summary_text_delta.sse": (
        ["thinking", "text"],
        "The number is 9, since 1 + x = 10 ⇒ x = 10 − 1 = 9.",
        None,
        (20, 166, 0, 128),
        "end_turn",
    ),
    "stream__text.sse": (["text"], "Hello! 🌍 How can I assist you today?", None, (9, 12, 0, 0), "end_turn"),
}


def context(ids: ToolIdMap | None = None, model: str = "openai_responses:gpt-5") -> RequestContext:
    return RequestContext(
        model=model, session_id="sess_s", tool_ids=ids if ids is not None else ToolIdMap(), message_id="msg_stream"
    )


def run(body: bytes, ctx: RequestContext | None = None) -> list[StreamEvent]:
    return list(ADAPTER.stream_response_sync(decode_all(body, "sse"), ctx or context()))


def final(events: list[StreamEvent]) -> Message:
    last = events[-1]
    assert isinstance(last, MessageComplete)
    assert sum(isinstance(e, MessageComplete) for e in events) == 1
    message: Message = last.message
    return message


def terminal_response(body: bytes) -> dict[str, Any]:
    *_, last = [orjson.loads(c.data) for c in decode_all(body, "sse")]
    response: dict[str, Any] = last["response"]
    return response


def test_every_stream_sample_has_an_expectation() -> None:
    assert set(STREAMS) == set(EXPECTED)


@pytest.mark.parametrize("name", STREAMS)
def test_every_recorded_stream_translates_into_its_real_content(name: str) -> None:
    types, text, tool, usage, stop = EXPECTED[name]
    events = run(read_bytes(PROVIDER, name))
    message = final(events)
    assert message.status is MessageStatus.COMPLETE
    assert [b.type for b in message.content] == types
    assert message.text() == text
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    if tool is not None:
        [use] = message.tool_uses()
        assert (use.name, use.input) == tool
        [start] = [e for e in events if isinstance(e, ToolUseStart)]
        [end] = [e for e in events if isinstance(e, ToolUseEnd)]
        fragments = "".join(e.partial_json for e in events if isinstance(e, ToolUseInputDelta))
        assert start.id == end.id == use.id and end.input == tool[1] and orjson.loads(fragments) == tool[1]
    got = message.metadata.usage
    assert got is not None
    assert (got.input_tokens, got.output_tokens, got.cached_input_tokens, got.reasoning_tokens) == usage
    assert any(isinstance(e, UsageUpdate) for e in events)
    assert message.metadata.stop_reason == stop
    assert not any(isinstance(e, StreamError) for e in events)


@pytest.mark.parametrize("name", STREAMS)
def test_the_streamed_message_equals_the_non_streaming_parse_of_the_terminal_response(name: str) -> None:
    body = read_bytes(PROVIDER, name)
    stream_ids, whole_ids = ToolIdMap(), ToolIdMap()
    streamed = final(run(body, context(stream_ids)))
    response = WireResponse(200, orjson.dumps(terminal_response(body)))
    whole = ADAPTER.from_wire_response(response, context(whole_ids))
    # each parse issues fresh canonical tool ids; compare with them replaced by OpenAI's call ids
    assert by_call_ids(streamed, stream_ids) == by_call_ids(whole, whole_ids)
    assert streamed.metadata.stop_reason == whole.metadata.stop_reason
    assert streamed.metadata.usage.model_dump(exclude={"latency_ms"}) == whole.metadata.usage.model_dump(  # type: ignore[union-attr]
        exclude={"latency_ms"}
    )


def by_call_ids(message: Message, ids: ToolIdMap) -> str:
    text = orjson.dumps([[b.model_dump() for b in message.content], message.metadata.provider_raw]).decode()
    for use in message.tool_uses():
        text = text.replace(use.id, ids.provider_id(PROVIDER, use.id) or "?")
    return text


def test_the_final_encrypted_reasoning_is_the_terminal_copy_not_the_first_announcement() -> None:
    body = read_bytes(PROVIDER, "stream__function_call_reasoning_usage.sse")
    chunks = [orjson.loads(c.data) for c in decode_all(body, "sse")]
    announced = chunks[2]["item"]["encrypted_content"]
    terminal = chunks[-1]["response"]["output"][0]["encrypted_content"]
    assert announced != terminal  # OpenAI re-encrypts per serialization
    thinking = final(run(body)).thinking()[0]
    assert thinking.signature == terminal and thinking.text == ""
    assert thinking.origin is not None and thinking.origin.model == "gpt-5"


def test_2025_05_events_without_sequence_number_are_read_the_same() -> None:
    body = read_bytes(PROVIDER, "stream__function_call_arguments_delta.sse")
    assert b"sequence_number" not in body
    assert final(run(body)).tool_uses()[0].input == {"location": "Boston, MA", "unit": "celsius"}


def test_reasoning_summary_deltas_become_thinking_deltas_in_order() -> None:
    events = run(read_bytes(PROVIDER, "stream__reasoning_summary_text_delta.sse"))
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking.startswith("**Solving for the number**\n\nThe user is asking a straightforward math question")
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert all(not isinstance(e, ThinkingDelta) for e in events[first_text:])
    assert final(events).thinking()[0].text == thinking


@pytest.mark.parametrize("size", [1, 7, 64])
def test_bytes_split_anywhere_give_the_same_message(size: int) -> None:
    body = read_bytes(PROVIDER, "stream__text.sse")
    decoder = SSEDecoder()
    chunks: list[WireChunk] = []
    for start in range(0, len(body), size):
        chunks.extend(decoder.feed(body[start : start + size]))
    chunks.extend(decoder.finish())
    message = final(list(ADAPTER.stream_response_sync(chunks, context())))
    assert message.text() == "Hello! 🌍 How can I assist you today?"


# --- constructed streams: parallel calls, custom calls, summary parts --------------------------------


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)


def completed(output: list[dict[str, Any]], status: str = "completed", **extra: Any) -> dict[str, Any]:
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    return {
        "type": f"response.{status}",
        "response": {"id": "resp_x", "status": status, "model": "gpt-5", "output": output, "usage": usage, **extra},
    }


def call(index: int, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    return {"id": f"fc_{index}", "type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def delta(index: int, text: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "item_id": f"fc_{index}",
        "output_index": index,
        "delta": text,
    }


def test_parallel_function_calls_with_interleaved_deltas_never_merge() -> None:
    body = sse(
        {"type": "response.output_item.added", "output_index": 0, "item": call(0, "call_a", "read")},
        {"type": "response.output_item.added", "output_index": 1, "item": call(1, "call_b", "read")},
        delta(0, '{"path":'),
        delta(1, '{"path":'),
        delta(1, '"b.txt"}'),
        delta(0, '"a.txt"}'),
        {"type": "response.output_item.done", "output_index": 0, "item": call(0, "call_a", "read", '{"path":"a.txt"}')},
        {"type": "response.output_item.done", "output_index": 1, "item": call(1, "call_b", "read", '{"path":"b.txt"}')},
        completed([call(0, "call_a", "read", '{"path":"a.txt"}'), call(1, "call_b", "read", '{"path":"b.txt"}')]),
    )
    ids = ToolIdMap()
    events = run(body, context(ids))
    message = final(events)
    assert [u.input for u in message.tool_uses()] == [{"path": "a.txt"}, {"path": "b.txt"}]
    assert [ids.lookup_canonical(PROVIDER, c) for c in ("call_a", "call_b")] == [u.id for u in message.tool_uses()]
    assert [e.input for e in events if isinstance(e, ToolUseEnd)] == [{"path": "a.txt"}, {"path": "b.txt"}]
    assert message.metadata.stop_reason == "tool_use"


def test_a_streamed_custom_tool_call_surfaces_its_raw_input_whole() -> None:
    item = {"id": "ctc_1", "type": "custom_tool_call", "call_id": "call_c", "name": "math_exp", "input": ""}
    body = sse(
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_1", "delta": "4 +"},
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_1", "delta": " 4"},
        {"type": "response.custom_tool_call_input.done", "output_index": 0, "item_id": "ctc_1", "input": "4 + 4"},
        completed([{**item, "input": "4 + 4"}]),
    )
    events = run(body)
    [end] = [e for e in events if isinstance(e, ToolUseEnd)]
    assert end.input == {"input": "4 + 4"}
    message = final(events)
    assert message.metadata.provider_raw[PROVIDER]["custom_tool_calls"] == [end.id]  # type: ignore[index]


def test_streamed_summary_parts_replay_as_the_same_parts() -> None:
    parts = ["**Plan**\n\nFirst step.", "**Check**\n\nSecond step."]
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA-final"}
    summary_events = [
        {
            "type": "response.reasoning_summary_text.delta",
            "output_index": 0,
            "item_id": "rs_1",
            "summary_index": i,
            "delta": text,
        }
        for i, text in enumerate(parts)
    ]
    done_item = {**reasoning, "summary": [{"type": "summary_text", "text": t} for t in parts]}
    message_item = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Done."}],
    }
    body = sse(
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        *summary_events,
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {"type": "response.output_item.added", "output_index": 1, "item": {**message_item, "content": []}},
        {
            "type": "response.output_text.delta",
            "output_index": 1,
            "content_index": 0,
            "item_id": "msg_1",
            "delta": "Done.",
        },
        completed([done_item, message_item]),
    )
    reply = final(run(body))
    assert reply.thinking()[0].text == "\n\n".join(parts)
    wire = ADAPTER.to_wire(
        [user_message("go"), reply, user_message("next")], [], AdapterOptions(model="openai_responses:gpt-5")
    ).body
    assert wire["input"][1] == {
        "type": "reasoning",
        "summary": done_item["summary"],
        "encrypted_content": "gAAAA-final",
    }


# --- broken streams ------------------------------------------------------------------------------


def cut_before_terminal(name: str) -> bytes:
    body = read_bytes(PROVIDER, name)
    return body[: body.rindex(b"event: response.")]


def test_a_stream_cut_before_its_terminal_event_ends_with_an_error_and_a_partial_message() -> None:
    events = run(cut_before_terminal("stream__text.sse"))
    error = events[-2]
    assert isinstance(error, StreamError) and error.error_class == "network" and error.retryable
    message = final(events)
    assert message.status is MessageStatus.PARTIAL and message.metadata.stop_reason == "error"
    assert message.text() == "Hello! 🌍 How can I assist you today?"
    raw = message.metadata.provider_raw[PROVIDER]  # type: ignore[index]
    assert raw["response_id"] == "resp_681e3e15125c8191afb05fabbf3b86d6047f076151f76bcc"


def test_a_stream_cut_inside_function_arguments_keeps_no_half_call() -> None:
    body = read_bytes(PROVIDER, "stream__function_call_arguments_delta.sse")
    body = body[: body.index(b"event: response.function_call_arguments.done")]
    events = run(body)
    assert isinstance(events[-2], StreamError)
    message = final(events)
    assert message.status is not MessageStatus.COMPLETE and message.content == []
    assert not any(isinstance(e, ToolUseEnd) for e in events)


def test_an_error_event_maps_to_its_class_and_keeps_what_arrived() -> None:
    body = cut_before_terminal("stream__text.sse") + sse(
        {
            "type": "error",
            "code": "rate_limit_exceeded",
            "message": "Rate limit reached. Try again in 2s.",
            "param": None,
            "sequence_number": 40,
        }
    )
    events = run(body)
    error = events[-2]
    assert isinstance(error, StreamError) and error.error_class == "rate_limit" and error.retryable
    assert "Rate limit reached" in error.message
    assert final(events).status is MessageStatus.PARTIAL


def test_a_failed_response_event_is_terminal_with_its_error_class() -> None:
    body = sse(completed([], status="failed", error={"code": "server_error", "message": "The model crashed."}))
    events = run(body)
    error = next(e for e in events if isinstance(e, StreamError))
    assert error.error_class == "server_error" and error.retryable and error.message == "The model crashed."
    assert final(events).status is MessageStatus.ERROR


def test_a_chunk_that_is_not_json_fails_the_stream_cleanly() -> None:
    events = list(
        ADAPTER.stream_response_sync([WireChunk(data='{"type": "response.output_text.delta", "del')], context())
    )
    assert isinstance(events[0], StreamError) and events[0].error_class == "other"
    assert final(events).status is MessageStatus.ERROR


def test_nothing_after_the_terminal_event_changes_the_message() -> None:
    body = read_bytes(PROVIDER, "stream__text.sse") + sse(
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "extra"}
    )
    events = run(body)
    assert final(events).text() == "Hello! 🌍 How can I assist you today?"


def test_a_message_whose_id_rotates_before_the_terminal_response_is_not_added_twice() -> None:
    """GitHub Copilot's Responses proxy gives an item a new id per event; the recorded text stream is
    replayed with its terminal message under an id never streamed."""
    events = [orjson.loads(c.data) for c in decode_all(read_bytes(PROVIDER, "stream__text.sse"), "sse")]
    for item in events[-1]["response"]["output"]:
        item["id"] = "msg_rotated"
    message = final(run(sse(*events)))
    streamed = final(run(read_bytes(PROVIDER, "stream__text.sse")))
    assert message.text() == streamed.text() and len(message.content) == len(streamed.content)
    changed = events[-1]["response"]["output"][0]
    changed["content"][0]["text"] = "something else"  # a different text under an unseen id is still kept
    assert final(run(sse(*events))).text().endswith("something else")
