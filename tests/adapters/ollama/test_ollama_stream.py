"""Ollama NDJSON streams -> canonical events: deltas, whole tool calls, done line, and broken streams.

The docs show `/api/chat` stream chunks pretty-printed one per code block; on the wire each is
one compact line, so `chat_stream` re-serializes them compactly, one per line. The
`stream__generate*.ndjson` recordings are `/api/generate` lines (`response` instead of
`message.content`); the translator reads them too, which exercises framing, the done line and the
mid-stream `{"error"}` line on real recorded bytes.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from fixture_files import read_bytes, read_json, wire_files

from metis_core.adapters.base import RequestContext
from metis_core.adapters.ollama.adapter import OllamaAdapter
from metis_core.messages import (
    Message,
    MessageComplete,
    MessageStatus,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseEnd,
    ToolUseInputDelta,
    ToolUseStart,
    UsageUpdate,
)
from metis_core.transport.framing import NDJSONDecoder, decode_all
from metis_core.transport.wire import WireResponse

TEXT_CHUNKS = ("docs_example__chat_stream_chunk.json", "docs_example__chat_stream_final_chunk.json")
TOOL_CHUNKS = ("docs_example__chat_stream_tool_call_chunk.json", "docs_example__chat_stream_tools_final_chunk.json")


def chat_stream(*names: str) -> bytes:
    return b"".join(orjson.dumps(read_json("ollama", name)) + b"\n" for name in names)


def lines(*objects: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(o) + b"\n" for o in objects)


def translate(body: bytes, model: str = "llama3.2") -> list[StreamEvent]:
    context = RequestContext(model=f"ollama:{model}", session_id="sess_s")
    return list(OllamaAdapter().stream_response_sync(decode_all(body, "ndjson"), context))


def final(events: list[StreamEvent]) -> Message:
    assert isinstance(events[-1], MessageComplete)
    assert sum(isinstance(e, MessageComplete) for e in events) == 1
    message: Message = events[-1].message
    return message


def test_every_stream_and_docs_chunk_sample_is_used_here() -> None:
    used = {
        "docs_example__chat_stream_chunk.json",
        "docs_example__chat_stream_final_chunk.json",
        "docs_example__chat_stream_tool_call_chunk.json",
        "docs_example__chat_stream_tools_final_chunk.json",
        "stream__generate.ndjson",
        "stream__generate_midstream_error.ndjson",
    }
    on_disk = {p.name for p in [*wire_files("ollama", "stream"), *wire_files("ollama", "docs_example")]}
    assert on_disk == used


def test_docs_text_chunks_stream_a_delta_then_usage_then_the_message() -> None:
    events = translate(chat_stream(*TEXT_CHUNKS))
    assert [type(e) for e in events] == [TextDelta, UsageUpdate, MessageComplete]
    assert events[0] == TextDelta(index=0, text="The")
    message = final(events)
    assert message.status is MessageStatus.COMPLETE and message.text() == "The"
    assert message.metadata.stop_reason == "end_turn"
    assert (message.metadata.usage.input_tokens, message.metadata.usage.output_tokens) == (26, 282)
    assert message.metadata.provider_raw["durations_ns"]["eval_duration"] == 4535599000


def test_docs_tool_call_chunk_surfaces_the_whole_call_at_once() -> None:
    body = chat_stream(
        "docs_example__chat_stream_tool_call_chunk.json", "docs_example__chat_stream_tools_final_chunk.json"
    )
    events = translate(body)
    assert [type(e) for e in events] == [ToolUseStart, ToolUseInputDelta, ToolUseEnd, UsageUpdate, MessageComplete]
    start, delta, end = events[:3]
    assert isinstance(start, ToolUseStart) and isinstance(end, ToolUseEnd) and isinstance(delta, ToolUseInputDelta)
    assert start.id == end.id and start.id.startswith("tu_") and start.name == "get_weather"
    assert orjson.loads(delta.partial_json) == {"city": "Tokyo"} and end.input == {"city": "Tokyo"}
    message = final(events)
    assert message.metadata.stop_reason == "tool_use"  # done_reason "stop" + a call means "run it"
    assert message.metadata.provider_raw["done_reason"] == "stop"
    assert [(u.name, u.input) for u in message.tool_uses()] == [("get_weather", {"city": "Tokyo"})]
    assert (message.metadata.usage.input_tokens, message.metadata.usage.output_tokens) == (169, 15)


def test_stream_and_non_stream_give_the_same_message_for_the_same_content() -> None:
    body = orjson.loads(read_bytes("ollama", "response__chat_tool_calls.json"))
    first = {"model": body["model"], "created_at": body["created_at"], "message": body["message"], "done": False}
    last = {**body, "message": {"role": "assistant", "content": ""}}
    streamed = final(translate(lines(first, last)))
    context = RequestContext(model="ollama:llama3.2", session_id="sess_s")
    whole = OllamaAdapter().from_wire_response(WireResponse(200, orjson.dumps(body)), context)

    def comparable(message: Message) -> dict[str, Any]:
        data = message.model_dump(mode="json", exclude={"id", "created_at"})
        data["metadata"]["usage"]["latency_ms"] = 0
        for block in data["content"]:
            block.pop("id", None)  # fresh canonical ids: Ollama sends none to keep them equal
        return data

    assert comparable(streamed) == comparable(whole)


def test_thinking_then_content_stream_as_two_blocks_in_order() -> None:
    body = lines(
        {"message": {"role": "assistant", "content": "", "thinking": "Count "}, "done": False},
        {"message": {"role": "assistant", "content": "", "thinking": "the r's."}, "done": False},
        {"message": {"role": "assistant", "content": "Three."}, "done": False},
        {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop", "eval_count": 9},
    )
    events = translate(body, "qwen3:8b")
    assert [type(e) for e in events[:3]] == [ThinkingDelta, ThinkingDelta, TextDelta]
    assert [e.index for e in events[:3]] == [0, 0, 1]  # type: ignore[union-attr]
    thinking, text = final(events).content
    assert isinstance(thinking, ThinkingBlock) and thinking.text == "Count the r's." and thinking.signature is None
    assert thinking.origin is not None and thinking.origin.matches("ollama", "ollama_chat", "qwen3:8b")
    assert text.type == "text" and text.text == "Three."


def test_parallel_calls_in_one_chunk_stay_separate() -> None:
    calls = [
        {"function": {"index": 0, "name": "get_temperature", "arguments": {"city": "New York"}}},
        {"function": {"index": 1, "name": "get_temperature", "arguments": {"city": "London"}}},
    ]
    body = lines({"message": {"role": "assistant", "content": "", "tool_calls": calls}, "done": False}, {"done": True})
    message = final(translate(body, "qwen3"))
    uses = message.tool_uses()
    assert [u.input["city"] for u in uses] == ["New York", "London"] and uses[0].id != uses[1].id


def test_generate_recording_streams_its_text_and_ends_on_the_done_line() -> None:
    events = translate(read_bytes("ollama", "stream__generate.ndjson"), "gemma4")
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "That",
        "'",
        "s",
        " a",
        " fantastic",
        " question",
        "!",
    ]
    message = final(events)
    assert message.status is MessageStatus.COMPLETE and message.text() == "That's a fantastic question!"
    assert message.metadata.stop_reason == "end_turn" and message.metadata.provider_raw["done_reason"] == "stop"


def test_midstream_error_line_gives_an_error_event_and_a_partial_message() -> None:
    events = translate(read_bytes("ollama", "stream__generate_midstream_error.ndjson"), "gemma4")
    errors = [e for e in events if isinstance(e, StreamError)]
    assert len(errors) == 1
    assert errors[0].error_class == "server_error" and errors[0].retryable is True
    assert errors[0].message == "an error was encountered while running the model"
    message = final(events)
    assert message.status is MessageStatus.PARTIAL and message.text() == " Yes.Ican"
    assert message.metadata.stop_reason == "error"


def test_a_midstream_context_error_is_classified_as_context_overflow() -> None:
    body = lines({"message": {"content": "a"}, "done": False}, {"error": "input length exceeds the context length"})
    [error] = [e for e in translate(body) if isinstance(e, StreamError)]
    assert error.error_class == "context_overflow" and error.retryable is False


def test_a_stream_that_ends_without_done_true_is_partial_never_complete() -> None:
    events = translate(chat_stream("docs_example__chat_stream_chunk.json"))
    [error] = [e for e in events if isinstance(e, StreamError)]
    assert error.error_class == "network" and error.retryable is True and "done:true" in error.message
    message = final(events)
    assert message.status is MessageStatus.PARTIAL and message.text() == "The"


def test_an_empty_stream_ends_as_an_error_message() -> None:
    events = translate(b"")
    assert isinstance(events[0], StreamError)
    assert final(events).status is MessageStatus.ERROR


def test_a_line_cut_in_half_at_the_end_is_malformed_and_partial() -> None:
    body = chat_stream("docs_example__chat_stream_chunk.json") + b'{"model":"llama3.2","message":{"role":"assis'
    events = translate(body)
    [error] = [e for e in events if isinstance(e, StreamError)]
    assert error.error_class == "other" and "not JSON" in error.message
    assert final(events).status is MessageStatus.PARTIAL


def test_lines_after_a_malformed_line_are_ignored() -> None:
    body = b'{"message":{"content":"Hi"},"done":false}\nnot json at all\n{"message":{"content":" there"},"done":true}\n'
    events = translate(body)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hi"]
    assert final(events).text() == "Hi" and final(events).status is MessageStatus.PARTIAL


def test_a_json_line_that_is_not_an_object_is_malformed() -> None:
    [error] = [e for e in translate(b'["a"]\n') if isinstance(e, StreamError)]
    assert "not a JSON object" in error.message


def test_a_tool_call_with_arguments_that_do_not_parse_makes_the_message_partial() -> None:
    call = {"function": {"name": "f", "arguments": '{"a": '}}
    body = lines({"message": {"content": "", "tool_calls": [call]}, "done": False}, {"done": True})
    events = translate(body)
    assert any(isinstance(e, StreamError) and "not a JSON object" in e.message for e in events)
    assert final(events).status is MessageStatus.PARTIAL


def test_blank_lines_crlf_and_bytes_split_anywhere_change_nothing() -> None:
    body = chat_stream(
        "docs_example__chat_stream_tool_call_chunk.json", "docs_example__chat_stream_tools_final_chunk.json"
    )
    noisy = b"\r\n\r\n" + body.replace(b"\n", b"\r\n\n")
    reference = final(translate(body))
    decoder = NDJSONDecoder()
    translator = OllamaAdapter().stream_translator(RequestContext(model="ollama:llama3.2", session_id="sess_s"))
    events: list[StreamEvent] = []
    for position in range(len(noisy)):
        for chunk in decoder.feed(noisy[position : position + 1]):
            events.extend(translator.feed(chunk))
    for chunk in decoder.finish():
        events.extend(translator.feed(chunk))
    events.extend(translator.finish())
    split = final(events)
    assert split.status is MessageStatus.COMPLETE
    assert [(u.name, u.input) for u in split.tool_uses()] == [(u.name, u.input) for u in reference.tool_uses()]
    assert split.metadata.usage.output_tokens == reference.metadata.usage.output_tokens == 15


@pytest.mark.parametrize("extra_line", [b'{"message":{"content":"late"},"done":false}\n', b"garbage\n"])
def test_nothing_is_emitted_after_the_done_line(extra_line: bytes) -> None:
    body = chat_stream(*TEXT_CHUNKS)
    events = translate(body + extra_line)
    assert isinstance(events[-1], MessageComplete) and final(events).text() == "The"
    assert final(events).status is MessageStatus.COMPLETE
