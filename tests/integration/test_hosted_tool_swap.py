"""A session that uses Anthropic web search, continues on OpenAI Chat and returns to Anthropic.

Every reply is recorded traffic over the SSE path. Each request body is checked: Anthropic is
asked for its web search tool; OpenAI Chat gets the search as text (sources and URLs), never a tool
call, with each projection logged; back at Anthropic the search blocks and citations are replayed
exactly as streamed. A turn that needs web search on a model without it is refused before sending.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from adapters.hosted.wire_oracle import anthropic_message, normalized_anthropic_content
from fixture_files import read_bytes
from support_servers import API_KEYS, Reply, ScriptedTransport

from metis_core.adapters._common.lossy import forget_logged_drops
from metis_core.adapters.base import AdapterOptions
from metis_core.agent.runtime import Runtime
from metis_core.events.bus import EventBus
from metis_core.messages import MessageStatus, ProviderToolCallBlock, ProviderToolResultBlock
from metis_core.routing.engine import NoRoutableModelError

SEARCH = "stream__hosted_web_search_live.sse"
CLAUDE = "anthropic:claude-sonnet-4-0"


def open_runtime(home: Path, script: ScriptedTransport) -> Runtime:
    return Runtime(home=home, client=script.model_client(), bus=EventBus(mode="strict"),
                   configured_providers=set(API_KEYS))


async def test_web_search_on_anthropic_then_openai_chat_then_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    forget_logged_drops()
    caplog.set_level(logging.WARNING, logger="metis_core.adapters.lossy")
    (tmp_path / "home").mkdir()
    (tmp_path / "ws").mkdir()
    script = ScriptedTransport()
    runtime = open_runtime(tmp_path / "home", script)
    session = runtime.sessions.create(tmp_path / "ws")

    script.script("anthropic", [Reply.fixture("anthropic", SEARCH)])
    runtime.sessions.swap_model(session, CLAUDE)
    searched = await runtime.turns.run(
        session, "What is the weather in San Francisco today?",
        options=AdapterOptions(model=CLAUDE, hosted_tools={"web_search": {}}),
    )
    assert searched.error is None and searched.final is not None
    answer = searched.final
    assert answer.status is MessageStatus.COMPLETE and answer.tool_uses() == []
    results = [b for b in answer.content if isinstance(b, ProviderToolResultBlock)]
    assert results and all(r.name == "web_search_tool_result" for r in results)

    script.script("openai", [Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")])
    runtime.sessions.swap_model(session, "openai:gpt-4.1")
    moved = await runtime.turns.run(session, "Summarise that in one line.")
    assert moved.error is None

    script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
    runtime.sessions.swap_model(session, CLAUDE)
    back = await runtime.turns.run(session, "Thanks, and tomorrow?")
    assert back.error is None and back.answer == "Hello there!"
    runtime.close()

    (first, _, first_body, _), (second, _, chat_body, _), (third, _, last_body, _) = script.requests
    assert (first, second, third) == ("anthropic.test", "openai.test", "anthropic.test")
    assert [t for t in first_body["tools"] if "type" in t] == [{"type": "web_search_20250305", "name": "web_search"}]

    # OpenAI Chat: the search as text with its sources, and nothing of it as a tool call
    assert not any(m.get("tool_calls") for m in chat_body["messages"])
    said = json.dumps(chat_body)
    assert "srvtoolu_" not in said and "encrypted_content" not in said
    first_url = results[0].payload["content"][0]["url"]
    assert json.dumps(first_url)[1:-1] in said
    assistant = next(m for m in chat_body["messages"] if m["role"] == "assistant")
    assert "[hosted tool call: web_search]" in json.dumps(assistant["content"])

    # back at Anthropic: the searched turn is replayed block for block, citations included
    recorded = anthropic_message(read_bytes("anthropic", SEARCH))
    replayed = next(m for m in last_body["messages"] if m["role"] == "assistant")["content"]
    assert replayed == normalized_anthropic_content(recorded["content"])
    assert any(b.get("citations") for b in replayed)
    assert not [t for t in last_body["tools"] if "type" in t], "web search was asked for in the first turn only"

    drops = [r for r in caplog.records if r.name == "metis_core.adapters.lossy"]
    dropped_kinds = {(r.adapter, r.block_type) for r in drops}  # type: ignore[attr-defined]
    assert {("openai/chat_completions", "provider_tool_call"), ("openai/chat_completions", "provider_tool_result"),
            ("openai/chat_completions", "citations")} <= dropped_kinds
    assert not any(r.adapter.startswith("anthropic") for r in drops)  # type: ignore[attr-defined]
    calls = [b for b in answer.content if isinstance(b, ProviderToolCallBlock)]
    assert all(c.origin.provider == "anthropic" for c in calls)


async def test_a_turn_needing_web_search_on_a_model_without_it_is_refused_unsent(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "home" / "config.yaml").write_text("defaults:\n  hosted_tools:\n    web_search: {}\n")
    script = ScriptedTransport()
    runtime = open_runtime(tmp_path / "home", script)
    session = runtime.sessions.create(tmp_path / "ws")
    runtime.sessions.swap_model(session, "openai:gpt-4.1")
    with pytest.raises(NoRoutableModelError, match=r"hosted tool\(s\) web_search"):
        await runtime.turns.run(session, "search the web for me")
    assert script.requests == []
    runtime.close()
