"""Every recorded OpenAI chat stream, served in 41-byte pieces through ModelClient and SSE framing.

Also: parallel calls interleaved by index never merge, a new id at a used index starts a new call,
the stream and the non-streaming response build the same Message, and broken input (cut-off body,
invalid tool-argument JSON, a chunk that is not JSON) ends with an error event and PARTIAL/ERROR.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from fixture_files import read_bytes, wire_files
from openai_chat_testkit import chat_client, final_message, json_response, sse_response

from metis_core.adapters.base import RequestContext
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.messages import (
    Message,
    MessageStatus,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolUseEnd,
    ToolUseInputDelta,
    ToolUseStart,
    UsageUpdate,
    user_message,
)
from metis_core.transport.framing import decode_all
from metis_core.transport.wire import WireResponse

MODEL = "openai:gpt-4o"

# name -> (stop_reason, text, [(tool, input)], input_tokens, output_tokens, cached)
EXPECTED: dict[str, tuple[str, str, list[tuple[str, dict[str, Any]]], int, int, int]] = {
    "stream__cached_tokens_usage_chunk.sse": (
        "max_tokens",
        "Structuring a database schema effectively",
        [],
        140,
        100,
        1280,
    ),
    "stream__content_logprobs.sse": ("end_turn", "Foo!", [], 9, 2, 0),
    "stream__finish_reason_length.sse": ("max_tokens", '{"', [], 79, 1, 0),
    "stream__n2_choices_tool_calls.sse": (
        "tool_use",
        "",
        [("get_current_weather", {"location": "San Francisco, CA"})],
        85,
        43,
        0,
    ),
    "stream__n3_multiple_choices.sse": (
        "end_turn",
        '{"city":"San Francisco","temperature":65,"units":"f"}',
        [],
        79,
        42,
        0,
    ),
    "stream__parallel_tool_calls_with_usage.sse": (
        "tool_use",
        "",
        [
            ("GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
            ("get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}),
        ],
        149,
        60,
        0,
    ),
    "stream__refusal_deltas.sse": ("refusal", "I'm sorry, I can't assist with that request.", [], 79, 11, 0),
    "stream__text_with_usage_chunk.sse": (
        "end_turn",
        "I'm unable to provide real-time weather updates.",
        [],
        14,
        30,
        0,
    ),
    "stream__tool_call_fragments_usage_null_per_chunk.sse": (
        "tool_use",
        "",
        [("get_current_weather", {"location": "San Francisco, CA", "unit": "celsius"})],
        85,
        24,
        0,
    ),
    "stream__tool_call_single.sse": ("tool_use", "", [("get_weather", {"city": "New York City"})], 44, 16, 0),
}


def stream(name: str) -> list[StreamEvent]:
    client, server = chat_client("openai", sse_response(read_bytes("openai_chat", name)))
    events = list(client.stream([user_message("hi")], MODEL, session_id="sess_stream"))
    sent = orjson.loads(server.requests[0].content)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    return events


def test_every_stream_sample_has_expectations() -> None:
    assert sorted(p.name for p in wire_files("openai_chat", "stream")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_stream_assembles_the_recorded_message(name: str) -> None:
    stop, text, tools, input_tokens, output_tokens, cached = EXPECTED[name]
    events = stream(name)
    message = final_message(events)
    assert message.status is MessageStatus.COMPLETE
    assert message.metadata.stop_reason == stop
    assert message.text().startswith(text)
    assert [(u.name, u.input) for u in message.tool_uses()] == tools
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (input_tokens, output_tokens, cached)
    assert sum(isinstance(e, UsageUpdate) for e in events) == 1
    assert not any(isinstance(e, StreamError) for e in events)
    ends = [e for e in events if isinstance(e, ToolUseEnd)]
    assert [(e.name, e.input) for e in ends] == tools  # arguments surface whole at tool_use_end


def test_text_deltas_concatenate_to_the_final_text() -> None:
    events = stream("stream__cached_tokens_usage_chunk.sse")
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == final_message(events).text()
    assert deltas.endswith("entities might")


def test_parallel_calls_interleaved_by_index_never_merge() -> None:
    events = stream("stream__parallel_tool_calls_with_usage.sse")
    starts = [e for e in events if isinstance(e, ToolUseStart)]
    assert [s.name for s in starts] == ["GetWeatherArgs", "get_stock_price"]
    assert starts[0].id != starts[1].id
    fragments: dict[str, str] = {}
    for event in events:
        if isinstance(event, ToolUseInputDelta):
            fragments[event.id] = fragments.get(event.id, "") + event.partial_json
    assert orjson.loads(fragments[starts[0].id]) == {"city": "Edinburgh", "country": "GB", "units": "c"}
    assert orjson.loads(fragments[starts[1].id]) == {"ticker": "AAPL", "exchange": "NASDAQ"}


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def call(index: int, fragment: str, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"index": index, "function": {"arguments": fragment}}
    if call_id:
        item["id"] = call_id
        item["type"] = "function"
        item["function"]["name"] = name
    return item


def translate(body: bytes) -> list[StreamEvent]:
    adapter = OpenAIChatAdapter()
    return list(adapter.stream_response_sync(decode_all(body, "sse"), RequestContext(model=MODEL)))


def test_a_new_id_at_an_index_already_in_use_starts_a_new_call() -> None:
    body = (
        chunk({"tool_calls": [call(0, '{"a":', "call_A", "first")]})
        + chunk({"tool_calls": [call(0, "1}")]})
        + chunk({"tool_calls": [call(0, '{"b":', "call_B", "second")]})  # some servers reuse index 0
        + chunk({"tool_calls": [call(0, "2}")]})
        + chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    message = final_message(translate(body))
    assert [(u.name, u.input) for u in message.tool_uses()] == [("first", {"a": 1}), ("second", {"b": 2})]


def test_interleaved_fragments_of_two_indexes_stay_apart() -> None:
    body = (
        chunk({"tool_calls": [call(0, "", "call_A", "a"), call(1, "", "call_B", "b")]})
        + chunk({"tool_calls": [call(1, '{"y":'), call(0, '{"x":')]})
        + chunk({"tool_calls": [call(0, "1}"), call(1, "2}")]})
        + chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    message = final_message(translate(body))
    assert [(u.name, u.input) for u in message.tool_uses()] == [("a", {"x": 1}), ("b", {"y": 2})]


def test_stream_and_response_build_the_same_message() -> None:
    pairs = [
        ("stream__parallel_tool_calls_with_usage.sse", "response__parallel_tool_calls.json"),
        ("stream__finish_reason_length.sse", "response__finish_reason_length.json"),
    ]
    for stream_name, response_name in pairs:
        streamed = final_message(stream(stream_name))
        client, _ = chat_client("openai", json_response(read_bytes("openai_chat", response_name)))
        parsed = client.complete([user_message("hi")], MODEL)
        assert comparable(streamed) == comparable(parsed)


def comparable(message: Message) -> dict[str, Any]:
    """What must agree: content (ids aside), stop reason, status, token counts, kept arguments."""
    content = [b.model_dump(exclude={"id"}) for b in message.content]
    usage = message.metadata.usage
    assert usage is not None
    raw = message.metadata.provider_raw or {}
    return {
        "content": content,
        "stop": message.metadata.stop_reason,
        "status": message.status,
        "usage": usage.model_dump(exclude={"latency_ms"}),
        "arguments": sorted(raw.get("tool_arguments", {}).values()),
    }


def test_truncated_stream_ends_with_an_error_and_a_partial_message() -> None:
    body = read_bytes("openai_chat", "stream__text_with_usage_chunk.sse")
    cut = body[: body.index(b"updates") + 40]  # mid-stream, mid-line: no finish_reason, no [DONE]
    client, _ = chat_client("openai", sse_response(cut))
    events = list(client.stream([user_message("hi")], MODEL))
    errors = [e for e in events if isinstance(e, StreamError)]
    assert len(errors) == 1 and errors[0].error_class == "network" and errors[0].retryable
    message = final_message(events)
    assert message.status is MessageStatus.PARTIAL
    assert message.text().startswith("I'm unable to provide real-time weather")


def test_stream_cut_before_any_content_is_raised_so_it_can_be_retried() -> None:
    from metis_core.errors import NetworkError

    client, _ = chat_client("openai", sse_response(b'data: {"id":"c1","choices":[{"index":0,"delta":{"role":"ass'))
    with pytest.raises(NetworkError):
        list(client.stream([user_message("hi")], MODEL))


def test_invalid_tool_argument_json_ends_with_an_error_and_partial() -> None:
    body = (
        chunk({"content": "Let me check."})
        + chunk({"tool_calls": [call(0, '{"city": "Par', "call_A", "get_weather")]})
        + chunk({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    events = translate(body)
    errors = [e for e in events if isinstance(e, StreamError)]
    assert len(errors) == 1 and "get_weather" in errors[0].message
    message = final_message(events)
    assert message.status is MessageStatus.PARTIAL
    assert message.text() == "Let me check." and message.tool_uses() == []


def test_a_chunk_that_is_not_json_ends_the_stream_with_an_error() -> None:
    events = translate(chunk({"content": "Hello"}) + b"data: {not json\n\n" + b"data: [DONE]\n\n")
    assert [e.error_class for e in events if isinstance(e, StreamError)] == ["other"]
    message = final_message(events)
    assert message.status is MessageStatus.PARTIAL and message.text() == "Hello"


def test_finish_reason_without_done_is_complete() -> None:
    events = translate(chunk({"content": "Hi"}) + chunk({}, "stop"))
    message = final_message(events)
    assert message.status is MessageStatus.COMPLETE and message.metadata.stop_reason == "end_turn"


def test_content_filter_maps_to_refusal() -> None:
    events = translate(chunk({"content": "I"}) + chunk({}, "content_filter") + b"data: [DONE]\n\n")
    assert final_message(events).metadata.stop_reason == "refusal"


async def test_async_stream_gives_the_same_events() -> None:
    name = "stream__tool_call_single.sse"
    client, _ = chat_client("openai", sse_response(read_bytes("openai_chat", name)))
    events = [e async for e in client.astream([user_message("hi")], MODEL)]
    message = final_message(events)
    assert [(u.name, u.input) for u in message.tool_uses()] == [("get_weather", {"city": "New York City"})]


def test_stream_response_reports_the_same_tool_ids_to_the_id_map() -> None:
    context = RequestContext(model=MODEL)
    events = list(
        OpenAIChatAdapter().stream_response_sync(
            decode_all(read_bytes("openai_chat", "stream__tool_call_single.sse"), "sse"), context
        )
    )
    start = next(e for e in events if isinstance(e, ToolUseStart))
    assert context.tool_ids.provider_id("openai", start.id) == "call_4XzlGBLtUe9dy3GVNV4jhq7h"


def test_response_body_is_json_response_not_stream() -> None:
    # A non-streaming body parsed by the streaming path would be one huge malformed event; the
    # client picks the path by request, so a JSON body to complete() parses normally.
    message = OpenAIChatAdapter().from_wire_response(
        WireResponse(200, read_bytes("openai_chat", "response__text.json")), RequestContext(model=MODEL)
    )
    assert message.status is MessageStatus.COMPLETE
