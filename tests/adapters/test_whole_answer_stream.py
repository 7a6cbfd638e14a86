"""A streaming request a server answers with one whole JSON body (it ignores `stream`): the answer is
parsed as the non-streamed one it is and told as events, sync and async; a stream mislabelled as JSON
still streams."""

from __future__ import annotations

import httpx
from fixture_files import read_bytes
from mock_http import MODEL, serve

from metis_core.messages import (
    MessageComplete,
    StreamEvent,
    TextDelta,
    ToolUseEnd,
    ToolUseStart,
    UsageUpdate,
    user_message,
)

HISTORY = [user_message("hello")]


def json_answer(name: str) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "application/json"}, content=read_bytes("anthropic", name))


def _final(events: list[StreamEvent]) -> MessageComplete:
    assert isinstance(events[-1], MessageComplete)
    return events[-1]


def test_a_whole_json_answer_to_a_stream_is_told_as_its_events() -> None:
    client, _ = serve(json_answer("response__text.json"))
    whole = serve(json_answer("response__text.json"))[0].complete(HISTORY, model=MODEL)
    events = list(client.stream(HISTORY, model=MODEL))
    done = _final(events)
    assert [b.model_dump() for b in done.message.content] == [b.model_dump() for b in whole.content]
    assert done.message.metadata.usage is not None and whole.metadata.usage is not None
    assert done.message.metadata.usage.model_dump(exclude={"latency_ms"}) == whole.metadata.usage.model_dump(
        exclude={"latency_ms"})
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == whole.text()
    assert any(isinstance(e, UsageUpdate) for e in events) and done.stop_reason == whole.metadata.stop_reason


async def test_a_whole_json_tool_call_reaches_an_async_stream_as_start_and_end() -> None:
    client, _ = serve(json_answer("response__tool_use.json"))
    events = [e async for e in client.astream(HISTORY, model=MODEL)]
    [call] = _final(events).message.tool_uses()
    starts = [e for e in events if isinstance(e, ToolUseStart)]
    ends = [e for e in events if isinstance(e, ToolUseEnd)]
    assert [(s.id, s.name) for s in starts] == [(call.id, call.name)] and [e.input for e in ends] == [call.input]


async def test_a_stream_labelled_as_json_still_streams() -> None:
    sse = read_bytes("anthropic", "stream__text_basic.sse")
    client, _ = serve(httpx.Response(200, headers={"content-type": "application/json"}, content=sse))
    events = [e async for e in client.astream(HISTORY, model=MODEL)]
    assert _final(events).message.text() == "Hello there!"
