"""Claude thinking signatures travel between Anthropic direct, Vertex AI and Claude on Bedrock.

Anthropic signs Claude's thinking alike on every platform, and Converse takes the signature as
`reasoningContent.reasoningText.signature`, so a swap keeps it for the same Claude model whatever
the Bedrock spelling (base id, inference profile, ARN). A non-Claude Bedrock model, another Claude
model or an application inference profile (an id naming no model) drops it with the logged
projection. Recordings: Anthropic's (tests/data/shared) and Bedrock's (tests/data/bedrock).
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import pytest
from bedrock_recordings import body, model_of
from fixture_files import read_bytes

from metis_core.adapters._common.platform_origin import claude_model_key
from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import Adapter, AdapterOptions, RequestContext
from metis_core.adapters.bedrock.adapter import BedrockAdapter
from metis_core.adapters.vertex.adapter import VertexAnthropicAdapter
from metis_core.messages import Message, RedactedThinkingBlock, Role, TextBlock, ThinkingBlock
from metis_core.transport.wire import WireResponse

BEDROCK, ANTHROPIC, VERTEX = BedrockAdapter(), AnthropicAdapter(), VertexAnthropicAdapter()
SONNET_4 = "claude-sonnet-4-20250514"
APPLICATION_PROFILE = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/mi1dadi0g15f"


def answer(adapter: Adapter, raw: bytes, model: str) -> Message:
    return adapter.from_wire_response(WireResponse(200, raw, {}), RequestContext(model))


def anthropic_answer(name: str) -> Message:
    raw = read_bytes("anthropic", name)
    return answer(ANTHROPIC, raw, "anthropic:" + json.loads(raw)["model"])


def bedrock_answer(name: str) -> Message:
    return answer(BEDROCK, body(name), model_of(name))


def follow_up(adapter: Adapter, reply: Message, model: str) -> tuple[list[dict[str, Any]], int]:
    """The assistant turn's wire blocks when `reply` is replayed to `model`, and how many were dropped."""
    history = [Message(role=Role.USER, content=[TextBlock(text="hi")]), reply,
               Message(role=Role.USER, content=[TextBlock(text="and then?")])]
    request = adapter.to_wire(history, [], AdapterOptions(model=model))
    return request.body["messages"][1]["content"], len(request.dropped)


def signature_of(reply: Message) -> str:
    [thinking] = [b for b in reply.content if isinstance(b, ThinkingBlock)]
    assert thinking.signature
    return thinking.signature


@pytest.mark.parametrize("model", [
    f"bedrock:anthropic.{SONNET_4}-v1:0",                     # base model id
    f"bedrock:us.anthropic.{SONNET_4}-v1:0",                  # cross-region inference profile
    f"bedrock:global.anthropic.{SONNET_4}-v1:0",
    f"bedrock:arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.{SONNET_4}-v1:0",
])
def test_anthropic_direct_thinking_keeps_its_signature_on_the_same_claude_on_bedrock(model: str) -> None:
    reply = anthropic_answer("response__tool_use_with_thinking.json")
    blocks, dropped = follow_up(BEDROCK, reply, model)
    assert blocks[0]["reasoningContent"]["reasoningText"]["signature"] == signature_of(reply)
    assert blocks[0]["reasoningContent"]["reasoningText"]["text"] == reply.content[0].text  # type: ignore[union-attr]
    assert dropped == 0


@pytest.mark.parametrize("model", [
    "bedrock:us.amazon.nova-micro-v1:0",                      # not Claude
    "bedrock:us.deepseek.r1-v1:0",
    "bedrock:meta.llama3-3-70b-instruct-v1:0",
    "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0",   # another Claude model
    "bedrock:" + APPLICATION_PROFILE,                         # an id that names no model
])
def test_anthropic_direct_thinking_is_dropped_and_logged_where_bedrock_cannot_take_it(
        model: str, caplog: pytest.LogCaptureFixture) -> None:
    reply = anthropic_answer("response__tool_use_with_thinking.json")
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        blocks, dropped = follow_up(BEDROCK, reply, model)
    assert not any("reasoningContent" in b for b in blocks) and dropped == 1
    assert [b for b in blocks if "toolUse" in b]  # the rest of the turn still goes
    assert f"signed by anthropic/messages/{SONNET_4}; a signature is only valid there" in caplog.text


def test_bedrock_thinking_keeps_its_signature_on_anthropic_direct_and_vertex_for_the_same_model() -> None:
    reply = bedrock_answer("converse_reasoning_signed")
    to_anthropic, dropped_anthropic = follow_up(ANTHROPIC, reply, "anthropic:" + SONNET_4)
    to_vertex, dropped_vertex = follow_up(VERTEX, reply, "vertex_anthropic:claude-sonnet-4@20250514")
    for blocks in (to_anthropic, to_vertex):
        assert blocks[0] == {"type": "thinking", "thinking": reply.content[0].text,  # type: ignore[union-attr]
                             "signature": signature_of(reply)}
    assert dropped_anthropic == dropped_vertex == 0
    other, dropped = follow_up(ANTHROPIC, reply, "anthropic:claude-opus-4-1-20250805")
    assert other[0]["type"] == "text" and dropped == 1


def test_vertex_thinking_keeps_its_signature_on_claude_on_bedrock() -> None:
    reply = answer(VERTEX, read_bytes("anthropic", "response__tool_use_with_thinking.json"),
                   "vertex_anthropic:claude-sonnet-4@20250514")
    blocks, dropped = follow_up(BEDROCK, reply, f"bedrock:us.anthropic.{SONNET_4}-v1:0")
    assert blocks[0]["reasoningContent"]["reasoningText"]["signature"] == signature_of(reply) and dropped == 0


def test_a_streamed_bedrock_signature_replays_to_anthropic_direct() -> None:
    decoder, translator = BEDROCK.chunk_decoder(), BEDROCK.stream_translator(
        RequestContext(model_of("stream_reasoning_signed")))
    events = [e for chunk in decoder.feed(body("stream_reasoning_signed")) for e in translator.feed(chunk)]
    reply = [*events, *translator.finish()][-1].message  # type: ignore[attr-defined]
    blocks, dropped = follow_up(ANTHROPIC, reply, "anthropic:" + SONNET_4)
    assert blocks[0]["signature"] == signature_of(reply) and dropped == 0


def test_redacted_thinking_is_re_encoded_between_the_messages_string_and_the_converse_blob() -> None:
    bedrock = bedrock_answer("converse_reasoning_redacted")  # Claude 3.7 Sonnet on Bedrock
    [blob] = [b.data for b in bedrock.content if isinstance(b, RedactedThinkingBlock)]
    to_anthropic, dropped = follow_up(ANTHROPIC, bedrock, "anthropic:claude-3-7-sonnet-20250219")
    assert to_anthropic[0] == {"type": "redacted_thinking", "data": base64.b64decode(blob).decode()} and not dropped
    assert to_anthropic[0]["data"].startswith("Eu8E")  # Anthropic's own opaque string, as its API sends it
    to_vertex, dropped = follow_up(VERTEX, bedrock, "vertex_anthropic:claude-3-7-sonnet@20250219")
    assert to_vertex[0] == to_anthropic[0] and not dropped

    direct = anthropic_answer("response__redacted_thinking.json")  # Claude Sonnet 4.5 on Anthropic direct
    [data] = [b.data for b in direct.content if isinstance(b, RedactedThinkingBlock)]
    to_bedrock, dropped = follow_up(BEDROCK, direct, "bedrock:global.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert to_bedrock[0] == {"reasoningContent": {"redactedContent": base64.b64encode(data.encode()).decode()}}
    back, _ = follow_up(BEDROCK, bedrock, model_of("converse_reasoning_redacted"))
    assert back[0] == {"reasoningContent": {"redactedContent": blob}}  # same API: byte for byte


def test_a_swap_leaves_the_callers_blocks_as_they_were() -> None:
    reply = bedrock_answer("converse_reasoning_redacted")
    before = reply.model_dump()
    follow_up(VERTEX, reply, "vertex_anthropic:claude-3-7-sonnet@20250219")
    follow_up(ANTHROPIC, reply, "anthropic:claude-3-7-sonnet-20250219")
    assert reply.model_dump() == before


@pytest.mark.parametrize(("model", "key"), [
    ("claude-sonnet-4-20250514", SONNET_4),
    ("claude-sonnet-4@20250514", SONNET_4),
    (f"us.anthropic.{SONNET_4}-v1:0", SONNET_4),
    (f"bedrock:us.anthropic.{SONNET_4}-v1:0", SONNET_4),  # a metis id, as a gateway client names the model
    (f"arn:aws:bedrock:us-east-1::foundation-model/anthropic.{SONNET_4}-v1:0", SONNET_4),
    ("anthropic.claude-opus-4-6-v1", "claude-opus-4-6"),
    (APPLICATION_PROFILE, None),
    ("us.amazon.nova-micro-v1:0", None),
    ("openrouter:anthropic/claude-sonnet-4", None),
    (f"anthropic:{SONNET_4}, bedrock:us.anthropic.{SONNET_4}-v1:0", None),  # a chain names no one model
])
def test_one_spelling_names_a_claude_model_on_every_platform(model: str, key: str | None) -> None:
    assert claude_model_key(model) == key


def test_only_claude_on_a_claude_platform_counts_as_signed_by_anthropic() -> None:
    from metis_core.adapters._common.platform_origin import claude_signed
    from metis_core.messages import BlockOrigin

    assert claude_signed(BlockOrigin(provider="bedrock", api="converse", model=f"us.anthropic.{SONNET_4}-v1:0"))
    assert claude_signed(BlockOrigin(provider="vertex_anthropic", api="messages", model="claude-sonnet-4@20250514"))
    assert not claude_signed(BlockOrigin(provider="bedrock", api="converse", model="us.deepseek.r1-v1:0"))
    assert not claude_signed(BlockOrigin(provider="bedrock", api="converse", model=APPLICATION_PROFILE))
    assert not claude_signed(BlockOrigin(provider="openrouter", api="chat_completions", model="anthropic/claude-4"))
