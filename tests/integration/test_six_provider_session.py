"""One session through all six providers, persisted, reloaded and continued (§11.1 test 2).

Every reply is real recorded traffic served over the HTTP/SSE/NDJSON path. The session collects
tool calls, parallel calls, signed thinking, Gemini thought signatures and OpenRouter reasoning;
each provider must receive a request that meets its own rules, every tool id must resolve, and
each content block a target cannot take is dropped and logged once with the §7.3 fields.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from fixture_files import read_bytes
from support_servers import API_KEYS, Reply, ScriptedTransport

from metis_core.adapters._common.lossy import forget_logged_drops
from metis_core.agent.runtime import Runtime
from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.events.bus import EventBus
from metis_core.messages import MessageStatus, Role, SideEffects, ToolDefinition, check_session

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class LookupTool:
    """A read-only tool under whatever name a recording calls; accepts any object input."""

    def __init__(self, name: str) -> None:
        self.definition = ToolDefinition(name=name, description=f"test tool {name}",
                                         input_schema={"type": "object", "properties": {}},
                                         side_effects=SideEffects.NONE, requires_workspace=False)

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        return ToolOutcome(f"{self.definition.name} result for {json.dumps(tool_input, sort_keys=True)}")


def ndjson(provider: str, *names: str) -> Reply:
    """Ollama's docs pretty-print; the wire is one compact object per line."""
    lines = [json.dumps(json.loads(read_bytes(provider, name))) for name in names]
    return Reply(200, ("\n".join(lines) + "\n").encode(), {"content-type": "application/x-ndjson"})


TURNS: list[tuple[str, str, list[Reply]]] = [
    ("anthropic:claude-sonnet-4-6", "think about the weather", [
        Reply.fixture("anthropic", "stream__thinking_delta_signature_delta.sse")]),
    ("anthropic:claude-sonnet-4-6", "what is the weather in Paris?", [
        Reply.fixture("anthropic", "stream__tool_use_input_json_delta.sse"),
        Reply.fixture("anthropic", "stream__text_basic.sse")]),
    ("openai:gpt-4.1", "weather in London and a stock price", [
        Reply.fixture("openai_chat", "stream__parallel_tool_calls_with_usage.sse"),
        Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")]),
    ("openai_responses:gpt-4.1", "and the current weather in Boston?", [
        Reply.fixture("openai_responses", "stream__function_call_arguments_delta.sse"),
        Reply.fixture("openai_responses", "stream__text.sse")]),
    ("gemini:gemini-2.5-flash", "which country is that?", [
        Reply.fixture("gemini", "stream__function_call_thought_signature.sse"),
        Reply.fixture("gemini", "stream__text_after_function_response.sse")]),
    ("ollama:llama3.2", "and Tokyo?", [
        ndjson("ollama", "response__chat_tool_calls.json"),
        ndjson("ollama", "response__chat_after_tool_result.json")]),
    ("openrouter:anthropic/claude-sonnet-4.5", "sum it all up", [
        Reply.fixture("openrouter", "stream__reasoning_details_deltas.sse")]),
]
HOSTS = {"anthropic": "anthropic.test", "openai": "openai.test", "openai_responses": "openai-responses.test",
         "gemini": "gemini.test", "ollama": "ollama.test", "openrouter": "openrouter.test"}


def open_runtime(home: Path, script: ScriptedTransport) -> Runtime:
    runtime = Runtime(home=home, client=script.model_client(), bus=EventBus(mode="strict"),
                      configured_providers=set(API_KEYS))
    for name in ("get_weather", "GetWeatherArgs", "get_stock_price", "get_current_weather", "get_country"):
        runtime.tools.register(LookupTool(name))
    return runtime


# --- each target's rules -----------------------------------------------------------------------

def check_anthropic(body: dict[str, Any]) -> None:
    pending: list[str] = []
    for message in body["messages"]:
        blocks = message["content"] if isinstance(message["content"], list) else []
        if pending:
            answered = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
            assert answered[: len(pending)] == pending, "every tool_use is answered in the next turn"
            pending = []
        for block in blocks:
            if block.get("type") == "tool_use":
                assert ANTHROPIC_ID.match(block["id"])
                pending.append(block["id"])
            if block.get("type") in ("thinking", "redacted_thinking"):
                assert block.get("signature") or block.get("data")
    assert not pending


def check_openai_chat(body: dict[str, Any]) -> None:
    messages = body["messages"]
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        if calls:
            ids = [c["id"] for c in calls]
            assert all(len(i) <= 40 for i in ids)
            following = messages[index + 1 : index + 1 + len(ids)]
            assert [m.get("tool_call_id") for m in following] == ids, "tool messages follow their calls"
        assert "thinking" not in json.dumps(message.get("content"))


def check_responses(body: dict[str, Any]) -> None:
    items = body["input"]
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert calls == outputs and len(set(calls)) == len(calls)
    assert "previous_response_id" not in body


def check_gemini(body: dict[str, Any]) -> None:
    contents = body["contents"]
    for index, content in enumerate(contents):
        called = [p["functionCall"]["name"] for p in content["parts"] if "functionCall" in p]
        if called:
            assert content["role"] == "model" and index + 1 < len(contents)
            answered = [p["functionResponse"]["name"] for p in contents[index + 1]["parts"] if "functionResponse" in p]
            assert answered == called, "one functionResponse per functionCall, in order"


def check_ollama(body: dict[str, Any]) -> None:
    for message in body["messages"]:
        if message["role"] == "tool":
            assert message.get("tool_name")
        for call in message.get("tool_calls") or []:
            assert isinstance(call["function"]["arguments"], dict)


CHECKS = {"anthropic.test": check_anthropic, "openai.test": check_openai_chat, "openrouter.test": check_openai_chat,
          "openai-responses.test": check_responses, "gemini.test": check_gemini, "ollama.test": check_ollama}


async def test_one_session_through_six_providers_is_persisted_reloaded_and_continued(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    forget_logged_drops()
    caplog.set_level(logging.WARNING, logger="metis_core.adapters.lossy")
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    script = ScriptedTransport()
    runtime = open_runtime(home, script)
    session = runtime.sessions.create(workspace)
    for model, text, replies in TURNS:
        script.script(model.partition(":")[0], replies)
        runtime.sessions.swap_model(session, model)
        result = await runtime.turns.run(session, text)
        assert result.error is None, (model, result.error)
        assert result.final is not None and result.final.status is MessageStatus.COMPLETE
        assert result.final.metadata.model == model
    runtime.close()

    runtime = open_runtime(home, script)
    resumed = runtime.sessions.resume(session.id)
    assert resumed.history == session.history
    script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
    runtime.sessions.swap_model(resumed, "anthropic:claude-sonnet-4-6")
    final = await runtime.turns.run(resumed, "one last thing")
    assert final.error is None and final.answer == "Hello there!"
    runtime.close()

    history = resumed.history
    check_session(history)
    tool_uses = [b for m in history for b in m.tool_uses()]
    assert len(tool_uses) >= 6
    assert {m.metadata.provider for m in history if m.role is Role.ASSISTANT} == set(HOSTS)

    for host, _, body, _ in script.requests:
        CHECKS[host](body)
    # Signed Anthropic thinking went back to the same model, and only there.
    last_anthropic = [body for host, _, body, _ in script.requests if host == "anthropic.test"][-1]
    replayed = [b for m in last_anthropic["messages"] if isinstance(m["content"], list) for b in m["content"]
                if b.get("type") == "thinking"]
    assert replayed and all(b["signature"] for b in replayed)
    assert not any("thinking" in json.dumps(body) for host, _, body, _ in script.requests
                   if host in ("openai.test", "ollama.test"))

    drops = [r for r in caplog.records if r.name == "metis_core.adapters.lossy"]
    assert drops, "thinking from one provider is dropped (and logged) for the others"
    keys = [(r.session_id, r.message_id, r.block_type, r.adapter, r.reason) for r in drops]  # type: ignore[attr-defined]
    assert len(keys) == len(set(keys)), "each lossy projection is logged once"
    assert all(r.session_id == session.id for r in drops)  # type: ignore[attr-defined]
