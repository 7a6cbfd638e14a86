"""The turn is closed on the record whatever breaks: partial answer saved, llm.call_failed (or
llm.call_completed when the provider billed it) and turn.completed emitted, never a trace that stops at
llm.call_started."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from fixture_files import read_bytes
from support_servers import Reply

from metis_core.messages import MessageStatus, StreamEvent
from metis_core.routing.fallback import FallbackChain

from .conftest import Harness


def _types(h: Harness, session_id: str) -> list[str]:
    return [event.type for event in h.events(session_id)]


async def test_a_malformed_event_mid_stream_saves_the_partial_answer_and_closes_the_turn(harness: Harness) -> None:
    h = harness
    body = read_bytes("anthropic", "stream__text_basic.sse").replace(
        b'"index":0,"delta":{"type":"text_delta","text":" there"}', b'"delta":{"type":"text_delta"}'
    )
    h.script.script("anthropic", [Reply(200, body, {"content-type": "text/event-stream"})])
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "hello")
    assert result.error is not None and "content_block_delta" in result.error
    stored = h.runtime.store.load_messages(session.id)
    assert stored[-1].status is MessageStatus.PARTIAL and stored[-1].text() == "Hello"
    types = _types(h, session.id)
    # message_start reported the usage it was billed: a completed call, the break on turn.completed
    assert types[-3:] == ["llm.call_started", "llm.call_completed", "turn.completed"]
    assert h.events(session.id)[-1].payload["stop_reason"] == "error"


async def test_an_unexpected_exception_mid_stream_still_closes_the_turn_then_surfaces(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
    real = FallbackChain.astream

    async def breaking(self: FallbackChain, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        count = 0
        async for event in real(self, *args, **kwargs):
            yield event
            count += 1
            if event.type == "text_delta":
                raise KeyError("index")  # a bug somewhere below the loop

    monkeypatch.setattr(FallbackChain, "astream", breaking)
    session = h.runtime.sessions.create(h.workspace)
    with pytest.raises(KeyError):
        await h.runtime.turns.run(session, "hello")
    stored = h.runtime.store.load_messages(session.id)
    assert stored[-1].status is MessageStatus.PARTIAL and stored[-1].text() == "Hello"
    types = _types(h, session.id)
    assert types[-3:] == ["llm.call_started", "llm.call_failed", "turn.completed"]
    completed = h.events(session.id)[-1]
    assert "unexpected KeyError" in completed.payload["signals_extra"]["error"]


@pytest.mark.parametrize("fixture", ["stream__tool_use_truncated_max_tokens.sse", "malformed"])
async def test_an_incomplete_answer_the_provider_charged_is_one_completed_call_in_store_and_trace(
    harness: Harness, fixture: str
) -> None:
    h = harness
    if fixture == "malformed":  # broken mid-stream, after message_start reported the input it was billed
        body = read_bytes("anthropic", "stream__text_basic.sse").replace(
            b'"index":0,"delta":{"type":"text_delta","text":" there"}', b'"delta":{"type":"text_delta"}')
    else:  # a tool call cut by max_tokens: a whole response, billed in full
        body = read_bytes("anthropic", fixture)
    h.script.script("anthropic", [Reply(200, body, {"content-type": "text/event-stream"})])
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "hello")
    assert result.error is not None
    [answer] = [m for m in h.runtime.store.load_messages(session.id) if m.role.value == "assistant"]
    usage = answer.metadata.usage
    assert answer.status is MessageStatus.PARTIAL and usage is not None and usage.cost_usd  # charged
    events = h.events(session.id)
    [call] = [e for e in events if e.type == "llm.call_completed"]
    assert call.payload["cost_usd"] == float(usage.cost_usd) and call.payload["output_tokens"] == usage.output_tokens
    assert [e for e in events if e.type == "llm.call_failed"] == []  # not a failed call and a stored charge at once
    [turn] = [e for e in events if e.type == "turn.completed"]
    assert turn.payload["llm_call_count"] == 1 and turn.payload["total_cost_usd"] == float(usage.cost_usd)
    assert turn.payload["signals_extra"]["error"] == result.error and turn.actor.value == "agent"
    stored = h.runtime.store.get_session(session.id)
    assert stored is not None and stored.total_cost_usd == usage.cost_usd
