"""A turn Anthropic pauses (`pause_turn`, long web searches) is continued, on recorded traffic.

The recording (pydantic-ai's cassette) holds both calls: a web search turn that pauses with a
server tool call still unanswered, then the request that resumes it and its answer. The agent must
send the paused answer back exactly as that recorded second request did, and end the turn on the
continuation; an answer that keeps pausing is not continued forever.
"""

from __future__ import annotations

import json
from typing import Any

from fixture_files import read_bytes, read_json
from support_servers import Reply

from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.continuation import MAX_CONTINUATIONS, paused
from metis_core.messages import ProviderToolCallBlock, ProviderToolResultBlock, Role

from .conftest import Harness

PAUSED, CONTINUED = "stream__hosted_pause_turn_web_search.sse", "stream__hosted_pause_turn_continued.sse"
RECORDED_SECOND = read_json("anthropic", "request__hosted_pause_turn_continue_stream.json")
PROMPT = RECORDED_SECOND["messages"][0]["content"][0]["text"]
MODEL = "anthropic:claude-sonnet-4-5"


def same(sent: dict[str, Any], recorded: dict[str, Any]) -> bool:
    """Equal, but for what the recorder's own replay (pydantic-ai) rewrote: the `caller: direct` that
    Anthropic's stream puts on each search result block (metis sends blocks as received) is left out
    there, and five result titles lost their typography (en dash and curly apostrophes)."""
    kept = {**sent, "content": [{k: v for k, v in b.items() if not (k == "caller" and v == {"type": "direct"})}
                                for b in sent["content"]]}
    typographic = json.dumps(kept, sort_keys=True).replace("\\u2013", "-").replace("\\u2019", "'")
    return typographic == json.dumps(recorded, sort_keys=True)


def options() -> AdapterOptions:
    return AdapterOptions(model=MODEL, hosted_tools={"web_search": {}}, max_tokens=RECORDED_SECOND["max_tokens"])


async def test_a_paused_turn_is_resumed_with_the_paused_answer_sent_back_as_recorded(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", PAUSED), Reply.fixture("anthropic", CONTINUED)])
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, PROMPT, override=MODEL, options=options())

    first, second = h.requests_to("anthropic.test")
    assert [m["role"] for m in second["messages"]] == ["user", "assistant"]
    assert same(second["messages"][1], RECORDED_SECOND["messages"][1])  # the paused answer, unchanged, sent last
    assert first["messages"] == second["messages"][:1] and first["messages"][0]["content"] == PROMPT
    assert result.llm_calls == 2 and result.error is None and result.stop_reason == "end_turn"
    stored = h.runtime.store.load_messages(session.id)
    assert [m.role for m in stored] == [Role.USER, Role.ASSISTANT, Role.ASSISTANT]
    paused_answer, continuation = stored[1], stored[2]
    assert paused(paused_answer) and not paused(continuation)
    assert isinstance(paused_answer.content[-1], ProviderToolCallBlock)  # the search still running
    opening = continuation.content[0]
    assert isinstance(opening, ProviderToolResultBlock) and opening.tool_use_id == paused_answer.content[-1].id
    events = h.events(session.id)
    completed = [e for e in events if e.type == "llm.call_completed"]
    assert len(completed) == 2 and completed[1].parent_event_id is not None
    (turn_done,) = [e for e in events if e.type == "turn.completed"]
    assert turn_done.payload["llm_call_count"] == 2 and turn_done.payload["stop_reason"] == "end_turn"


async def test_the_next_turn_sends_both_halves_as_one_assistant_turn(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", PAUSED), Reply.fixture("anthropic", CONTINUED),
                                  Reply.fixture("anthropic", "stream__text_basic.sse")])
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, PROMPT, override=MODEL, options=options())
    await h.runtime.turns.run(session, "Thanks, shorter please.", override=MODEL, options=options())
    third = h.requests_to("anthropic.test")[2]
    assert [m["role"] for m in third["messages"]] == ["user", "assistant", "user"]
    merged = third["messages"][1]["content"]
    paused_blocks = RECORDED_SECOND["messages"][1]["content"]
    assert same({"content": merged[: len(paused_blocks)]}, {"content": paused_blocks})
    assert merged[len(paused_blocks)]["type"] == "web_search_tool_result"  # the continuation follows in the same turn


async def test_an_answer_that_keeps_pausing_is_not_continued_forever(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", PAUSED)] * (MAX_CONTINUATIONS + 2))
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, PROMPT, override=MODEL, options=options())
    assert result.llm_calls == MAX_CONTINUATIONS + 1
    assert result.limit_reached == "llm_calls" and "paused its hosted tools" in (result.error or "")
    assert len(h.requests_to("anthropic.test")) == MAX_CONTINUATIONS + 1
    assert read_bytes("anthropic", PAUSED)  # the queue still holds the replies never asked for

