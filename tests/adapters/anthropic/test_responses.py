"""Every recorded Anthropic response, served over HTTP and parsed through ModelClient."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx
import pytest
from fixture_files import plain_wire_files, read_bytes
from mock_http import MODEL, serve

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.errors import MalformedResponseError
from metis_core.messages import (
    Message,
    MessageStatus,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    user_message,
)

HISTORY = [user_message("hello")]

# name -> (stop_reason, [block types], input_tokens, output_tokens, cached_input_tokens)
EXPECTED: dict[str, tuple[str, list[str], int, int, int]] = {
    "response__parallel_tool_use.json": (
        "tool_use",
        ["text", "tool_use", "tool_use", "tool_use", "tool_use"],
        423,
        202,
        0,
    ),
    "response__redacted_thinking.json": ("end_turn", ["redacted_thinking", "text"], 92, 196, 0),
    "response__stop_reason_max_tokens.json": ("max_tokens", ["text"], 43, 15, 0),
    "response__text.json": ("end_turn", ["text"], 705, 25, 0),
    "response__text_after_tool_result.json": ("end_turn", ["text"], 768, 29, 0),
    "response__thinking_with_signature.json": ("end_turn", ["thinking", "text"], 43, 321, 0),
    "response__tool_use.json": ("tool_use", ["tool_use"], 597, 71, 0),
    "response__tool_use_caller_stop_details.json": ("tool_use", ["tool_use"], 599, 68, 0),
    "response__tool_use_with_thinking.json": ("tool_use", ["thinking", "text", "tool_use"], 398, 155, 0),
}


def test_every_response_fixture_has_expectations() -> None:
    assert {p.name for p in plain_wire_files("anthropic", "response")} == set(EXPECTED)


def _ok(name: str) -> httpx.Response:
    return httpx.Response(200, content=read_bytes("anthropic", name), headers={"request-id": "req_test"})


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_response_parses_with_content_stop_reason_and_usage(name: str) -> None:
    client, server = serve(_ok(name))
    ids = ToolIdMap()
    message = client.complete(HISTORY, model=MODEL, tool_ids=ids, session_id="sess_r")
    stop, types, input_tokens, output_tokens, cached = EXPECTED[name]
    assert message.status is MessageStatus.COMPLETE
    assert message.metadata.stop_reason == stop
    assert [b.type for b in message.content] == types
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (input_tokens, output_tokens, cached)
    assert usage.cost_usd is None  # prices=None
    assert message.metadata.model == MODEL and message.metadata.provider == "anthropic"
    assert message.session_id == "sess_r"
    raw = message.metadata.provider_raw or {}
    assert raw["id"].startswith("msg_") and raw["stop_reason"] == stop
    # every provider tool id is mapped to a fresh canonical id and back
    wire = json.loads(read_bytes("anthropic", name))
    provider_ids = [b["id"] for b in wire["content"] if b["type"] == "tool_use"]
    canonical = [b.id for b in message.content if isinstance(b, ToolUseBlock)]
    assert [ids.lookup_canonical("anthropic", p) for p in provider_ids] == canonical
    assert all(c.startswith("tu_") for c in canonical)
    assert len(server.requests) == 1


async def test_parallel_tool_calls_keep_their_own_inputs_async() -> None:
    client, _ = serve(_ok("response__parallel_tool_use.json"))
    message = await client.acomplete(HISTORY, model=MODEL)
    uses = message.tool_uses()
    assert [u.input["name"] for u in uses] == ["Alice", "Bob", "Charlie", "Daisy"]
    assert {u.name for u in uses} == {"retrieve_entity_info"}
    assert len({u.id for u in uses}) == 4
    assert message.text().startswith("I'll help you find out who is the youngest")


def test_thinking_keeps_signature_and_origin_for_replay() -> None:
    client, _ = serve(_ok("response__tool_use_with_thinking.json"))
    message = client.complete(HISTORY, model=MODEL)
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.signature is not None and thinking.signature.startswith("EqEECkYICxgCKkAo3UA4")
    assert thinking.text.startswith('The user is asking about the largest city in "the user country"')
    assert thinking.origin is not None
    assert (thinking.origin.provider, thinking.origin.api, thinking.origin.model) == (
        "anthropic",
        "messages",
        "claude-sonnet-4-5",
    )
    tool = message.content[2]
    assert isinstance(tool, ToolUseBlock) and tool.name == "get_user_country" and tool.input == {}


def test_redacted_thinking_is_kept_opaque() -> None:
    client, _ = serve(_ok("response__redacted_thinking.json"))
    message = client.complete(HISTORY, model=MODEL)
    block = message.content[0]
    assert isinstance(block, RedactedThinkingBlock) and block.data.startswith("EvgFCkYIBxgCKkBmxKtCnM3x")
    assert block.origin is not None and block.origin.model == "claude-sonnet-4-5"


def test_text_and_tool_input_values_are_exact() -> None:
    client, _ = serve(_ok("response__text.json"))
    assert (
        client.complete(HISTORY, model=MODEL).text() == "The weather in SF is currently **20°C** (68°F) and **Sunny**!"
    )
    client, _ = serve(_ok("response__tool_use_caller_stop_details.json"))
    (use,) = client.complete(HISTORY, model=MODEL).tool_uses()
    assert (use.name, use.input) == ("add", {"a": 1, "b": 2})


def test_cost_is_priced_from_the_table_when_prices_are_loaded() -> None:
    client, _ = serve(_ok("response__text.json"), prices="default")
    usage = client.complete(HISTORY, model="anthropic:claude-haiku-4-5").metadata.usage
    assert usage is not None and usage.cost_usd is not None
    # haiku 4.5: $1 / M input, $5 / M output -> 705 * 1e-6 + 25 * 5e-6
    assert usage.cost_usd == Decimal("0.000830")
    assert usage.latency_ms >= 0


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (b'{"type":"message","id":"msg_1"}', "no `content` list"),
    ],
)
def test_malformed_success_bodies_raise_malformed_response_error(body: bytes, problem: str) -> None:
    client, _ = serve(httpx.Response(200, content=body))
    with pytest.raises(MalformedResponseError, match=problem):
        client.complete(HISTORY, model=MODEL)


def test_unknown_block_types_are_skipped_and_named_not_turned_into_text() -> None:
    body: dict[str, Any] = {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "hologram_2031", "id": "x_1", "data": {"shape": "q"}},
            {"type": "text", "text": "answer"},
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    client, _ = serve(httpx.Response(200, json=body))
    message: Message = client.complete(HISTORY, model=MODEL)
    assert message.content == [TextBlock(text="answer")]
    assert (message.metadata.provider_raw or {})["skipped_block_types"] == ["hologram_2031"]
