"""Every recorded Anthropic SSE stream, served in arbitrary byte chunks through ModelClient.stream."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fixture_files import plain_wire_files, read_bytes
from mock_http import MODEL, serve, sse_response

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.stream import AnthropicStreamTranslator
from metis_core.adapters.base import RequestContext
from metis_core.errors import ServerError
from metis_core.messages import (
    Message,
    MessageComplete,
    MessageStatus,
    RedactedThinkingBlock,
    StreamError,
    StreamEvent,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    ToolUseEnd,
    user_message,
)
from metis_core.transport.framing import decode_all
from metis_core.transport.retry import RetryPolicy

HISTORY = [user_message("hello")]

# name -> (status, stop_reason, text, input_tokens, output_tokens, cached_input_tokens)
EXPECTED: dict[str, tuple[MessageStatus, str, str, int, int, int]] = {
    "stream__cache_read_usage.sse": (
        MessageStatus.COMPLETE,
        "max_tokens",
        "A **system** is an organized collection",
        11,
        100,
        1031,
    ),
    "stream__recorded_structured_output.sse": (MessageStatus.COMPLETE, "end_turn", "[12345,67890]", 135, 10, 0),
    "stream__redacted_thinking.sse": (
        MessageStatus.COMPLETE,
        "end_turn",
        "I notice that you've sent what appears",
        92,
        189,
        0,
    ),
    "stream__refusal_stop_details.sse": (MessageStatus.COMPLETE, "refusal", "", 20, 0, 0),
    "stream__text_basic.sse": (MessageStatus.COMPLETE, "end_turn", "Hello there!", 11, 6, 0),
    "stream__thinking_delta_signature_delta.sse": (
        MessageStatus.COMPLETE,
        "end_turn",
        "Here are the basic steps for safely crossing",
        43,
        282,
        0,
    ),
    "stream__tool_use_input_json_delta.sse": (
        MessageStatus.COMPLETE,
        "tool_use",
        "I'll check the current weather in Paris for you.",
        377,
        65,
        0,
    ),
    "stream__tool_use_truncated_max_tokens.sse": (
        MessageStatus.PARTIAL,
        "max_tokens",
        "I'll create a comprehensive tax guide",
        450,
        124,
        0,
    ),
    "stream__tool_use_with_whitespace_padding.sse": (
        MessageStatus.COMPLETE,
        "tool_use",
        "<thinking>\nThe get_weather tool is relevant",
        599,
        135,
        0,
    ),
}
ERROR_STREAMS = {"stream__error_event_overloaded.sse"}


def test_every_stream_fixture_is_covered() -> None:
    assert {p.name for p in plain_wire_files("anthropic", "stream")} == set(EXPECTED) | ERROR_STREAMS


def final(events: list[StreamEvent]) -> Message:
    assert isinstance(events[-1], MessageComplete)
    assert sum(isinstance(e, MessageComplete) for e in events) == 1
    message: Message = events[-1].message
    return message


@pytest.mark.parametrize("chunk_size", [1, 37, 100_000])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_stream_yields_the_recorded_content_in_any_chunking(name: str, chunk_size: int) -> None:
    client, _ = serve(sse_response(read_bytes("anthropic", name), chunk_size=chunk_size))
    events = list(client.stream(HISTORY, model=MODEL, session_id="sess_s"))
    message = final(events)
    status, stop, text, input_tokens, output_tokens, cached = EXPECTED[name]
    assert message.status is status
    assert message.metadata.stop_reason == stop
    assert message.text().startswith(text)
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (input_tokens, output_tokens, cached)
    streamed_text = "".join(e.text for e in events if e.type == "text_delta")
    assert streamed_text == message.text()
    errors = [e for e in events if isinstance(e, StreamError)]
    assert bool(errors) is (status is not MessageStatus.COMPLETE)


async def test_async_stream_matches_sync_stream() -> None:
    body = read_bytes("anthropic", "stream__tool_use_with_whitespace_padding.sse")
    client, _ = serve(sse_response(body, chunk_size=13))
    events = [e async for e in client.astream(HISTORY, model=MODEL)]
    message = final(events)
    (use,) = message.tool_uses()
    assert (use.name, use.input) == ("get_weather", {"location": "San Francisco, CA"})
    sync_client, _ = serve(sse_response(body, chunk_size=64))
    sync_message = final(list(sync_client.stream(HISTORY, model=MODEL)))
    assert [b.type for b in sync_message.content] == [b.type for b in message.content]
    assert sync_message.text() == message.text()


def test_tool_arguments_surface_whole_at_tool_use_end() -> None:
    client, _ = serve(sse_response(read_bytes("anthropic", "stream__tool_use_input_json_delta.sse")))
    events = list(client.stream(HISTORY, model=MODEL))
    fragments = [e.partial_json for e in events if e.type == "tool_use_input_delta"]
    assert "".join(fragments) == '{"location": "Paris"}'
    (end,) = [e for e in events if isinstance(e, ToolUseEnd)]
    (start,) = [e for e in events if e.type == "tool_use_start"]
    assert (end.name, end.input, end.id) == ("get_weather", {"location": "Paris"}, start.id)
    assert end.index == 1 and start.index == 1


def test_truncated_tool_input_at_max_tokens_ends_partial_with_an_error_never_complete() -> None:
    client, _ = serve(sse_response(read_bytes("anthropic", "stream__tool_use_truncated_max_tokens.sse")))
    events = list(client.stream(HISTORY, model=MODEL))
    message = final(events)
    assert message.status is MessageStatus.PARTIAL
    (error,) = [e for e in events if isinstance(e, StreamError)]
    assert "make_file" in error.message
    assert message.tool_uses() == []  # a call with broken arguments is never offered for execution
    assert (message.metadata.provider_raw or {})["incomplete"] == "max_tokens"


def test_thinking_stream_assembles_text_and_signature_from_deltas() -> None:
    client, _ = serve(sse_response(read_bytes("anthropic", "stream__thinking_delta_signature_delta.sse")))
    message = final(list(client.stream(HISTORY, model=MODEL)))
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.text.startswith("This is a straightforward question about pedestrian safety.")
    assert thinking.signature is not None and thinking.signature.startswith("EvMCCkYICxgCKkCHP2cSuEdcJK")
    assert thinking.origin is not None and thinking.origin.model == "claude-sonnet-4-5"


def test_redacted_thinking_blocks_stay_separate_and_opaque() -> None:
    client, _ = serve(sse_response(read_bytes("anthropic", "stream__redacted_thinking.sse")))
    message = final(list(client.stream(HISTORY, model=MODEL)))
    first, second = message.content[0], message.content[1]
    assert isinstance(first, RedactedThinkingBlock) and first.data.startswith("EqkECkYIBxgCKkA8AZ4noDfV5")
    assert isinstance(second, RedactedThinkingBlock) and second.data.startswith("EtgBCkYIBxgCKkDQfGkwzflEJP5a")


def test_refusal_keeps_stop_details_in_provider_raw() -> None:
    client, _ = serve(sse_response(read_bytes("anthropic", "stream__refusal_stop_details.sse")))
    message = final(list(client.stream(HISTORY, model=MODEL)))
    assert message.metadata.stop_reason == "refusal"
    assert (message.metadata.provider_raw or {})["stop_details"]["category"] == "cyber"


def test_overloaded_error_event_before_any_content_is_raised_as_a_retryable_server_error() -> None:
    client, _ = serve(sse_response(read_bytes("anthropic", "stream__error_event_overloaded.sse")))
    with pytest.raises(ServerError) as raised:
        list(client.stream(HISTORY, model=MODEL))
    assert raised.value.retryable and "Overloaded" in str(raised.value)


def test_overloaded_error_event_is_retried_and_the_second_attempt_streams() -> None:
    sleeps: list[float] = []
    client, server = serve(
        sse_response(read_bytes("anthropic", "stream__error_event_overloaded.sse")),
        sse_response(read_bytes("anthropic", "stream__text_basic.sse")),
        retry=RetryPolicy(max_retries=2, sleep=sleeps.append, random=lambda: 0.5),
    )
    message = final(list(client.stream(HISTORY, model=MODEL)))
    assert message.text() == "Hello there!"
    assert len(server.requests) == 2 and sleeps == [0.5]


def test_error_event_after_content_ends_the_stream_partial_with_the_error_class() -> None:
    body = read_bytes("anthropic", "stream__text_basic.sse").split(b"event: content_block_stop")[0]
    body += b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    client, _ = serve(sse_response(body))
    events = list(client.stream(HISTORY, model=MODEL))
    (error,) = [e for e in events if isinstance(e, StreamError)]
    assert (error.error_class, error.retryable) == ("server_error", True)
    message = final(events)
    assert message.status is MessageStatus.PARTIAL and message.text() == "Hello there!"


def test_stream_and_response_of_the_same_content_give_the_same_message() -> None:
    stream_body = read_bytes("anthropic", "stream__tool_use_input_json_delta.sse")
    stream_ids, response_ids = ToolIdMap(), ToolIdMap()
    client, _ = serve(sse_response(stream_body))
    streamed = final(list(client.stream(HISTORY, model=MODEL, tool_ids=stream_ids)))
    response: dict[str, Any] = {
        "id": "msg_019Q1hrJbZG26Fb9BQhrkHEr",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [
            {"type": "text", "text": "I'll check the current weather in Paris for you."},
            {
                "type": "tool_use",
                "id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "name": "get_weather",
                "input": {"location": "Paris"},
            },
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 377, "output_tokens": 65},
    }
    client, _ = serve(httpx.Response(200, content=json.dumps(response).encode()))
    parsed = client.complete(HISTORY, model=MODEL, tool_ids=response_ids)
    # canonical ids are fresh per call; each map binds its own to the same provider id
    (streamed_use,), (parsed_use,) = streamed.tool_uses(), parsed.tool_uses()
    assert stream_ids.to_dict()["anthropic"][streamed_use.id] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    assert response_ids.to_dict()["anthropic"][parsed_use.id] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    relabeled = [b.model_copy(update={"id": streamed_use.id}) if b is parsed_use else b for b in parsed.content]
    assert relabeled == streamed.content
    assert parsed.metadata.stop_reason == streamed.metadata.stop_reason
    assert parsed.metadata.provider_raw == streamed.metadata.provider_raw
    assert parsed.metadata.usage is not None and streamed.metadata.usage is not None
    assert parsed.metadata.usage.model_dump(exclude={"latency_ms"}) == streamed.metadata.usage.model_dump(
        exclude={"latency_ms"}
    )


def test_translator_fed_directly_ends_with_an_error_when_message_stop_never_came() -> None:
    body = read_bytes("anthropic", "stream__text_basic.sse").split(b"event: message_delta")[0]
    translator = AnthropicStreamTranslator(RequestContext(model=MODEL))
    events: list[StreamEvent] = []
    for chunk in decode_all(body, "sse"):
        events.extend(translator.feed(chunk))
    events.extend(translator.finish())
    assert [e.type for e in events[-2:]] == ["error", "message_complete"]
    message = final(events)
    assert message.status is MessageStatus.PARTIAL and message.content == [TextBlock(text="Hello there!")]
    assert translator.finish() == []


def test_stream_without_message_start_still_parses_tool_use() -> None:
    body = (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"tool_use","id":"toolu_x","name":"f","input":{}}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"input_json_delta","partial_json":"{\\"a\\": 1}"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},'
        b'"usage":{"output_tokens":3}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    client, _ = serve(sse_response(body))
    message = final(list(client.stream(HISTORY, model=MODEL)))
    assert message.content[0] == ToolUseBlock(id=message.content[0].id, name="f", input={"a": 1})  # type: ignore[union-attr]
