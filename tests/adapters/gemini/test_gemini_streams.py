"""streamGenerateContent?alt=sse -> canonical events: every recorded stream, CRLF framing, cut-offs."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from fixture_files import plain_wire_files, read_bytes
from mock_http import serve, sse_response

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import RequestContext
from metis_core.adapters.gemini.adapter import GeminiAdapter
from metis_core.messages import (
    Message,
    MessageComplete,
    MessageStatus,
    StreamError,
    TextBlock,
    ThinkingBlock,
    ToolUseEnd,
    ToolUseInputDelta,
    ToolUseStart,
    user_message,
)
from metis_core.transport.framing import decode_all
from metis_core.transport.wire import WireResponse

EXPECTED: dict[str, dict[str, Any]] = {
    "stream__text.sse": {"model": "gemini-2.0-flash-exp", "text": "The capital of France is Paris.\n",
                         "stop": "end_turn", "usage": (13, 8, 0), "calls": []},
    "stream__text_after_function_response.sse": {
        "model": "gemini-3-pro-preview", "text": "The capital of Mexico is Mexico City.", "stop": "end_turn",
        "usage": (257, 8, 0), "calls": []},
    "stream__function_call_thought_signature.sse": {
        "model": "gemini-3-pro-preview", "text": "", "stop": "tool_use", "usage": (29, 10 + 202, 202),
        "calls": [("get_country", {})]},
    "stream__thinking_thought_parts.sse": {
        "model": "gemini-2.5-pro", "text": "This is a great question! Safely crossin", "stop": "end_turn",
        "usage": (34, 469 + 787, 787), "calls": []},
}


def test_every_stream_fixture_has_expectations() -> None:
    assert {p.name for p in plain_wire_files("gemini", "stream")} == set(EXPECTED)


def translate(body: bytes, model: str = "gemini:gemini-2.5-pro", ids: ToolIdMap | None = None) -> list[Any]:
    adapter = GeminiAdapter()
    context = RequestContext(model=model, tool_ids=ids or ToolIdMap())
    return list(adapter.stream_response_sync(decode_all(body, adapter.framing), context))


def final(events: list[Any]) -> Message:
    assert isinstance(events[-1], MessageComplete)
    assert sum(isinstance(e, MessageComplete) for e in events) == 1
    message: Message = events[-1].message
    return message


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_stream_translates_through_model_client(name: str) -> None:
    want = EXPECTED[name]
    client, server = serve(sse_response(read_bytes("gemini", name), chunk_size=29), provider="gemini",
                           api_key="AIza-test-SECRET")
    events = list(client.stream([user_message("hi")], model="gemini:" + want["model"]))
    request = server.requests[0]
    assert request.url.path == f"/v1beta/models/{want['model']}:streamGenerateContent"
    assert dict(request.url.params) == {"alt": "sse"}
    assert request.headers["x-goog-api-key"] == "AIza-test-SECRET"
    message = final(events)
    assert message.status is MessageStatus.COMPLETE
    assert message.metadata.stop_reason == want["stop"]
    assert message.text().startswith(want["text"])
    assert [(u.name, u.input) for u in message.tool_uses()] == want["calls"]
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == want["usage"]
    assert not any(isinstance(e, StreamError) for e in events)


def test_crlf_framed_events_each_become_one_chunk() -> None:
    body = read_bytes("gemini", "stream__text.sse")
    assert body.count(b"\r\n\r\n") == 3 and b"event:" not in body
    assert len(decode_all(body, "sse")) == 3


def test_text_deltas_concatenate_into_one_text_block() -> None:
    events = translate(read_bytes("gemini", "stream__text.sse"), "gemini:gemini-2.0-flash-exp")
    deltas = [e.text for e in events if e.type == "text_delta"]
    assert deltas == ["The", " capital of France", " is Paris.\n"]
    assert {e.index for e in events if e.type == "text_delta"} == {0}
    assert final(events).content == [TextBlock(text="The capital of France is Paris.\n")]


def test_a_function_call_arrives_as_start_one_input_delta_and_end_with_its_signature() -> None:
    body = read_bytes("gemini", "stream__function_call_thought_signature.sse")
    first = orjson.loads(decode_all(body, "sse")[0].data)
    wire_signature = first["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    events = translate(body, "gemini:gemini-3-pro-preview")
    kinds = [type(e) for e in events if isinstance(e, ToolUseStart | ToolUseInputDelta | ToolUseEnd)]
    assert kinds == [ToolUseStart, ToolUseInputDelta, ToolUseEnd]
    start = next(e for e in events if isinstance(e, ToolUseStart))
    delta = next(e for e in events if isinstance(e, ToolUseInputDelta))
    end = next(e for e in events if isinstance(e, ToolUseEnd))
    assert (start.name, delta.partial_json, end.input) == ("get_country", "{}", {})
    message = final(events)
    table = (message.metadata.provider_raw or {})["thought_signatures"]
    assert table["tool_use"] == {start.id: wire_signature}
    assert table["origin"]["model"] == "gemini-3-pro-preview"
    assert "trailing" not in table  # the closing empty text part carried no signature


def test_thought_chunks_form_one_thinking_block_and_the_answer_keeps_its_signature() -> None:
    body = read_bytes("gemini", "stream__thinking_thought_parts.sse")
    chunks = [orjson.loads(c.data) for c in decode_all(body, "sse")]
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    events = translate(body)
    message = final(events)
    thinking, text = message.content
    assert isinstance(thinking, ThinkingBlock) and isinstance(text, TextBlock)
    assert thinking.text == "".join(p["text"] for p in parts if p.get("thought"))
    assert text.text == "".join(p["text"] for p in parts if not p.get("thought"))
    signature = next(p["thoughtSignature"] for p in parts if "thoughtSignature" in p)
    assert (message.metadata.provider_raw or {})["thought_signatures"]["text"] == {"0": signature}
    assert sum(e.type == "thinking_delta" for e in events) == 4


def _as_one_response(body: bytes) -> bytes:
    """The non-streaming body holding the same content as a recorded stream (parts merged per kind)."""
    chunks = [orjson.loads(c.data) for c in decode_all(body, "sse")]
    parts: list[dict[str, Any]] = []
    for chunk in chunks:
        for part in chunk["candidates"][0]["content"]["parts"]:
            last = parts[-1] if parts else None
            if (last is not None and "text" in part and "text" in last and part.get("thought") == last.get("thought")
                    and "functionCall" not in last and part["text"]):
                last["text"] += part["text"]
                if "thoughtSignature" in part:
                    last["thoughtSignature"] = part["thoughtSignature"]
            else:
                parts.append(dict(part))
    last_chunk = chunks[-1]
    return orjson.dumps({
        "candidates": [{"content": {"role": "model", "parts": parts},
                        "finishReason": last_chunk["candidates"][0]["finishReason"]}],
        "usageMetadata": last_chunk["usageMetadata"], "modelVersion": last_chunk["modelVersion"],
        "responseId": last_chunk["responseId"],
    })


@pytest.mark.parametrize("name", ["stream__thinking_thought_parts.sse", "stream__function_call_thought_signature.sse",
                                  "stream__text.sse"])
def test_streaming_and_non_streaming_build_the_same_message(name: str) -> None:
    model = "gemini:" + EXPECTED[name]["model"]
    body = read_bytes("gemini", name)
    streamed = final(translate(body, model))
    whole = GeminiAdapter().from_wire_response(WireResponse(200, _as_one_response(body)), RequestContext(model=model))
    ids = {u.id: f"call{i}" for i, u in enumerate(streamed.tool_uses())}
    ids.update({u.id: f"call{i}" for i, u in enumerate(whole.tool_uses())})

    def comparable(message: Message) -> tuple[Any, ...]:
        dump = orjson.dumps([b.model_dump(mode="json") for b in message.content],
                            default=str).decode()
        raw = orjson.dumps(message.metadata.provider_raw).decode()
        for real, label in ids.items():
            dump, raw = dump.replace(real, label), raw.replace(real, label)
        usage = message.metadata.usage
        assert usage is not None
        meta = message.metadata
        return dump, orjson.loads(raw), meta.stop_reason, message.status, usage.model_dump(exclude={"latency_ms"})

    assert comparable(streamed) == comparable(whole)


@pytest.mark.parametrize("size", [1, 7, 64])
def test_bytes_split_anywhere_give_the_same_message(size: int) -> None:
    body = read_bytes("gemini", "stream__thinking_thought_parts.sse")
    adapter = GeminiAdapter()
    from metis_core.transport.framing import SSEDecoder

    decoder = SSEDecoder()
    translator = adapter.stream_translator(RequestContext(model="gemini:gemini-2.5-pro"))
    events: list[Any] = []
    for i in range(0, len(body), size):
        for chunk in decoder.feed(body[i : i + size]):
            events.extend(translator.feed(chunk))
    for chunk in decoder.finish():
        events.extend(translator.feed(chunk))
    events.extend(translator.finish())
    assert final(events).text() == final(translate(body)).text()


def test_a_stream_cut_before_finish_reason_ends_with_an_error_and_a_partial_message() -> None:
    body = read_bytes("gemini", "stream__thinking_thought_parts.sse")
    cut = body[: body.index(b"\r\n\r\n", len(body) // 2) + 4]  # whole events, none with finishReason
    events = translate(cut)
    error = next(e for e in events if isinstance(e, StreamError))
    assert error.error_class == "network" and error.retryable
    message = final(events)
    assert message.status is MessageStatus.PARTIAL
    assert message.metadata.stop_reason == "error"
    assert message.text().startswith("This is a great question!")


def test_a_body_cut_inside_an_event_ends_with_an_error_and_keeps_what_arrived() -> None:
    body = read_bytes("gemini", "stream__thinking_thought_parts.sse")
    events = translate(body[: len(body) // 2])
    assert sum(isinstance(e, StreamError) for e in events) == 1
    message = final(events)
    assert message.status is MessageStatus.PARTIAL and message.thinking()


def test_a_connection_drop_through_model_client_yields_error_then_partial() -> None:
    body = read_bytes("gemini", "stream__text.sse")
    first_event = body[: body.index(b"\r\n\r\n") + 4]
    client, _ = serve(sse_response(first_event, fail=httpx.ReadError("connection reset")), provider="gemini",
                      api_key="k")
    events = list(client.stream([user_message("hi")], model="gemini:gemini-2.0-flash-exp"))
    assert any(isinstance(e, StreamError) for e in events)
    message = final(events)
    assert message.status is MessageStatus.PARTIAL and message.text() == "The"


def test_an_error_object_inside_the_stream_maps_to_its_error_class() -> None:
    body = (b'data: {"candidates": [{"content": {"parts": [{"text": "Hel"}], "role": "model"}}]}\r\n\r\n'
            b'data: {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}\r\n\r\n')
    events = translate(body)
    error = next(e for e in events if isinstance(e, StreamError))
    assert (error.error_class, error.retryable) == ("server_error", True)
    assert final(events).status is MessageStatus.PARTIAL


def test_a_chunk_that_is_not_json_ends_the_stream_with_an_error() -> None:
    events = translate(b'data: {"candidates": [{"content": {"parts": [{"text": "ok"}]}}]}\r\n\r\ndata: {oops\r\n\r\n')
    assert any(isinstance(e, StreamError) and "not JSON" in e.message for e in events)
    assert final(events).status is MessageStatus.PARTIAL


def test_an_empty_stream_ends_with_an_error_message() -> None:
    events = translate(b"")
    assert isinstance(events[0], StreamError)
    assert final(events).status is MessageStatus.ERROR


def test_usage_arriving_after_the_finish_reason_chunk_is_used() -> None:
    body = (b'data: {"candidates": [{"content": {"parts": [{"text": "hi"}], "role": "model"}, '
            b'"finishReason": "STOP"}]}\r\n\r\n'
            b'data: {"usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1}}\r\n\r\n')
    message = final(translate(body))
    assert message.status is MessageStatus.COMPLETE
    assert message.metadata.usage is not None and message.metadata.usage.input_tokens == 5


def test_parallel_calls_in_one_chunk_stay_separate_with_distinct_ids() -> None:
    body = read_bytes("gemini", "response__parallel_function_calls.json")
    events = translate(b"data: " + orjson.dumps(orjson.loads(body)) + b"\r\n\r\n", "gemini:gemini-3-flash-preview")
    ends = [e for e in events if isinstance(e, ToolUseEnd)]
    assert len(ends) == 3 and len({e.id for e in ends}) == 3 and len({e.index for e in ends}) == 3
