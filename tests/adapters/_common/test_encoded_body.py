"""A request body's JSON, with the history's messages and the tools written from the JSON kept with them, is
byte for byte what encoding the body dict gives, for every provider and every length of a growing history;
whatever changes inside a sent message or a tool, the next body is the fresh mapping's."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from metis_core.adapters._common.encoded_body import EncodedItems, encode_body
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, WireRequest
from metis_core.adapters.registry import get_adapter
from metis_core.messages import (
    Message,
    MessageMetadata,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    system_message,
    user_message,
)

MODELS = {
    "anthropic": "anthropic:claude-haiku-4-5", "openai": "openai:gpt-4o-mini", "openrouter": "openrouter:openai/gpt-4o",
    "openai_responses": "openai_responses:gpt-4o-mini", "gemini": "gemini:gemini-2.0-flash",
    "ollama": "ollama:llama3.1", "bedrock": "bedrock:amazon.nova-lite-v1:0", "azure": "azure:gpt-4o-mini",
    "vertex": "vertex:gemini-2.0-flash", "vertex_anthropic": "vertex_anthropic:claude-3-5-haiku-latest",
}


ANSWERED = MessageMetadata(
    model="openai:gpt-4o-mini", provider="openai", usage=Usage(input_tokens=10, output_tokens=5),
    routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="openai:gpt-4o-mini", reason="test"))


def tools() -> list[ToolDefinition]:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    return [ToolDefinition(name="lookup", description="Looks a thing up.", input_schema=schema)]


def conversation(turns: int = 4) -> list[Message]:
    """A system prompt, then user -> assistant (text and a call) -> tool result, `turns` times, then a user turn."""
    out = [system_message("be brief")]
    for turn in range(turns):
        call_id = f"tu_01CALL{turn:04d}"
        out.append(user_message(f"question {turn}"))
        out.append(Message(role=Role.ASSISTANT, content=[
            TextBlock(text=f"looking {turn}"), ToolUseBlock(id=call_id, name="lookup", input={"q": f"x{turn}"})],
            metadata=ANSWERED.model_copy()))
        out.append(Message(role=Role.TOOL, content=[ToolResultBlock(tool_use_id=call_id, content=[
            TextBlock(text=f"answer {turn}")])], metadata=MessageMetadata(parent_tool_use_id=call_id)))
    out.append(user_message("thanks"))
    return out


def request(provider: str, messages: list[Message], offered: list[ToolDefinition]) -> WireRequest:
    return get_adapter(provider).to_wire(messages, list(offered), AdapterOptions(model=MODELS[provider]), ToolIdMap())


def fresh(provider: str, messages: list[Message], offered: list[ToolDefinition]) -> WireRequest:
    """The same request from copies of every message and tool: never seen, mapped from scratch."""
    return request(provider, [m.model_copy(deep=True) for m in messages], [t.model_copy(deep=True) for t in offered])


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_a_growing_history_sent_again_encodes_to_the_body_and_the_fresh_mapping(provider: str) -> None:
    history, offered = conversation(), tools()
    for end in (2, 5, 8, 8, 11, 14, 14, 14):  # each length sent until it is held, then resumed by the next
        sent = request(provider, history[:end], offered)
        encoded = sent.body_json()
        assert encoded == orjson.dumps(sent.body)
        assert orjson.loads(encoded) == fresh(provider, history[:end], offered).body
    if provider in ("openai", "anthropic"):  # the two mappings that keep a history's wire messages
        assert [(part.key, part.count > 0) for part in sent.encoded] == [("messages", True), ("tools", True)]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_change_inside_a_sent_message_or_tool_gives_the_fresh_body(provider: str) -> None:
    history, offered = conversation(), tools()
    before = [request(provider, history, offered).body_json() for _ in range(3)][-1]
    call = history[2].content[1]
    assert isinstance(call, ToolUseBlock)
    call.input["q"] = "changed in place"
    after = request(provider, history, offered).body_json()
    assert after != before and orjson.loads(after) == fresh(provider, history, offered).body
    offered[0].input_schema["properties"]["q"]["description"] = "what to look up"  # a tool changed in place
    changed_tool = request(provider, history, offered).body_json()
    assert changed_tool != after and b"what to look up" in changed_tool
    assert orjson.loads(changed_tool) == fresh(provider, history, offered).body
    offered[0].description = "Finds a thing."  # a field assigned
    assert b"Finds a thing." in request(provider, history, offered).body_json()


def test_a_list_the_body_no_longer_holds_is_encoded_afresh() -> None:
    items: list[Any] = [{"role": "user", "content": "hi"}, {"role": "user", "content": "again"}]
    kept = EncodedItems("messages", items, 2, orjson.dumps(items)[1:-1])
    body = {"model": "m", "messages": items, "n": 1}
    assert encode_body(body, (kept,)) == orjson.dumps(body)
    replaced = {**body, "messages": [{"role": "user", "content": "other"}]}  # e.g. `extra` replaced it
    assert encode_body(replaced, (kept,)) == orjson.dumps(replaced)
    longer = [*items, {"role": "assistant", "content": "yes"}]
    assert encode_body({"messages": longer}, (EncodedItems("messages", longer, 2, kept.json),)) == orjson.dumps(
        {"messages": longer})
