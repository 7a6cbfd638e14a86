"""Streams to Anthropic clients carry Claude's own blocks where Claude put them.

The upstream serves recorded Anthropic streams (web search with citations, web fetch, code
execution, MCP, tool search, compaction, redacted thinking); a non-streamed call gets the body the
same recording adds up to. The official `anthropic` SDK reads the gateway's stream: every event
must parse, the blocks must be started in the recorded order with consecutive indices, each
citation must arrive as a `citations_delta`, and the final message must equal the non-streamed one.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from adapters.hosted.wire_oracle import anthropic_message
from cli.replay_server import ANTHROPIC, Reply
from fixture_files import read_bytes

from metis_core.transport.framing import decode_all

from .gateway_harness import GatewayHarness

MODEL = "anthropic:claude-sonnet-4-5"
BETA = {"stream__hosted_mcp_tool_use.sse", "stream__hosted_compaction.sse"}
"""Blocks of beta features: read with `client.beta.messages`, whose stream parser knows them."""
RECORDINGS = [
    "stream__redacted_thinking.sse",
    "stream__hosted_web_search_live.sse",
    "stream__hosted_web_search_citations.sse",
    "stream__hosted_web_fetch.sse",
    "stream__hosted_bash_and_text_editor_code_execution.sse",
    "stream__hosted_mcp_tool_use.sse",
    "stream__hosted_tool_search.sse",
    "stream__hosted_compaction.sse",
    "stream__hosted_programmatic_code_execution.sse",
]


def recorded_events(stream: bytes) -> list[dict[str, Any]]:
    return [json.loads(chunk.data) for chunk in decode_all(stream, "sse") if chunk.data]


def block_starts(events: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(e["index"], e["content_block"]["type"]) for e in events if e["type"] == "content_block_start"]


def citations_in(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["delta"]["citation"] for e in events
            if e["type"] == "content_block_delta" and e["delta"]["type"] == "citations_delta"]


def client_of(gateway: GatewayHarness) -> anthropic.Anthropic:
    _, token = gateway.issue()
    return anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)


def without_direct_callers(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recorded content as a non-streamed answer holds it: on a client tool_use a `direct` caller (the
    default) only streams echo, so neither Anthropic's body nor the gateway writes it; any other is kept.
    Server-tool blocks are written as Claude sent them."""
    return [{k: v for k, v in b.items() if not (k == "caller" and v == {"type": "direct"})}
            if b["type"] == "tool_use" else b for b in content]


def streamed(client: anthropic.Anthropic, *, beta: bool = False, **request: Any) -> tuple[list[dict[str, Any]], Any]:
    """Every event the SDK parsed (as wire dicts) and the message it accumulated."""
    messages: Any = client.beta.messages if beta else client.messages
    with messages.stream(model=MODEL, max_tokens=1000, **request) as stream:
        events = [event.to_dict() for event in stream if event.type in
                  ("message_start", "content_block_start", "content_block_delta", "content_block_stop",
                   "message_delta", "message_stop")]
        return events, stream.get_final_message()


@pytest.mark.parametrize("recording", RECORDINGS)
def test_a_streamed_answer_holds_claudes_blocks_in_place_and_equals_the_plain_answer(
        gateway: GatewayHarness, recording: str) -> None:
    raw = read_bytes("anthropic", recording)
    upstream_events = recorded_events(raw)
    body = anthropic_message(raw)
    gateway.upstream.script(ANTHROPIC, Reply(200, raw, "text/event-stream"),
                            Reply(200, json.dumps(body).encode(), "application/json"))
    client = client_of(gateway)
    asked: dict[str, Any] = {"messages": [{"role": "user", "content": "go"}]}

    beta = recording in BETA
    events, final = streamed(client, beta=beta, **asked)
    plain = (client.beta.messages if beta else client.messages).create(model=MODEL, max_tokens=1000, **asked)

    starts = block_starts(events)
    assert [index for index, _ in starts] == list(range(len(starts)))  # consecutive, in the order started
    expected_types = [kind for _, kind in block_starts(upstream_events)]
    leading = [b["type"] for b in body["content"][: len(body["content"]) - len(expected_types)]]
    assert [kind for _, kind in starts] == leading + expected_types  # the recorded order, nothing moved
    assert citations_in(events) == citations_in(upstream_events)
    assert final.to_dict()["content"] == plain.to_dict()["content"]
    assert final.to_dict()["content"] == without_direct_callers(body["content"])  # a programmatic call's kept
    assert final.stop_reason == plain.stop_reason
    # a client resuming a call made from code execution names the container it ran in
    assert final.to_dict(mode="json").get("container") == plain.to_dict(mode="json").get("container") \
        == body.get("container")


def test_redacted_thinking_comes_before_the_text_it_preceded(gateway: GatewayHarness) -> None:
    """The recorded answer opens with two redacted-thinking blocks; the text follows them at index 2."""
    raw = read_bytes("anthropic", "stream__redacted_thinking.sse")
    gateway.upstream.script(ANTHROPIC, Reply(200, raw, "text/event-stream"))
    events, final = streamed(client_of(gateway), messages=[{"role": "user", "content": "go"}])
    assert block_starts(events) == [(0, "redacted_thinking"), (1, "redacted_thinking"), (2, "text")]
    first_text = next(i for i, e in enumerate(events) if e["type"] == "content_block_delta")
    stops = [i for i, e in enumerate(events) if e["type"] == "content_block_stop"]
    assert stops[0] < stops[1] < first_text  # both closed before any text is written
    assert [b.type for b in final.content] == ["redacted_thinking", "redacted_thinking", "text"]


def test_a_streamed_web_search_answer_goes_back_upstream_unchanged(gateway: GatewayHarness) -> None:
    """The client sends the streamed answer back as its next turn's history: Claude gets its own blocks,
    citations and encrypted results byte for byte."""
    raw = read_bytes("anthropic", "stream__hosted_web_search_live.sse")
    gateway.upstream.script(ANTHROPIC, Reply(200, raw, "text/event-stream"),
                            Reply.recording("anthropic", "response__text.json"))
    client = client_of(gateway)
    search = [{"type": "web_search_20250305", "name": "web_search"}]
    asked = {"role": "user", "content": "What happened in the news today?"}
    _, final = streamed(client, tools=search, messages=[asked])
    client.messages.create(model=MODEL, max_tokens=1000, tools=search,  # type: ignore[list-item]
                           messages=[asked, {"role": "assistant", "content": final.to_dict()["content"]},
                                     {"role": "user", "content": "And the weather?"}])
    assert gateway.upstream.bodies(ANTHROPIC)[1]["messages"][1]["content"] == anthropic_message(raw)["content"]


def test_an_openai_client_on_a_claude_web_search_stream_gets_the_text(gateway: GatewayHarness) -> None:
    """The new stream events are harmless to the OpenAI shapes: the Chat stream carries the answer's text."""
    import openai

    raw = read_bytes("anthropic", "stream__hosted_web_search_live.sse")
    gateway.upstream.script(ANTHROPIC, Reply(200, raw, "text/event-stream"))
    _, token = gateway.issue()
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    with client.chat.completions.stream(model=MODEL, messages=[{"role": "user", "content": "news?"}]) as stream:
        final = stream.get_final_completion()
    expected = "".join(b["text"] for b in anthropic_message(raw)["content"] if b["type"] == "text")
    assert final.choices[0].message.content == expected



def test_a_streamed_structured_ask_answered_by_a_tool_call_keeps_claudes_thinking_first(
        gateway: GatewayHarness) -> None:
    """A structured ask runs before the first byte and its answer is streamed from the final message alone.
    Answered by a call of the client's own tool, the answer is Claude's content as recorded (signed thinking,
    text, tool_use), and the stream starts the blocks in that order, the thinking closed with its signature."""
    from pydantic import BaseModel

    class Country(BaseModel):
        country: str

    recorded = json.loads(read_bytes("anthropic", "response__tool_use_with_thinking.json"))
    gateway.upstream.script(ANTHROPIC, Reply(200, json.dumps(recorded).encode(), "application/json"))
    tool = {"name": "get_user_country", "description": "The user's country",
            "input_schema": {"type": "object", "properties": {}}}
    schema = {"type": "json_schema", "schema": {**Country.model_json_schema(), "additionalProperties": False}}
    with client_of(gateway).messages.stream(  # the ask as sent, so the SDK does not parse the text before the call
            model="anthropic:claude-sonnet-4-0", max_tokens=1000, tools=[tool], extra_body={
                "output_config": {"format": schema}}, messages=[{"role": "user", "content": "Where am I?"}]) as stream:
        starts = [(e.index, e.content_block.type) for e in stream if e.type == "content_block_start"]
        final = stream.get_final_message()
    assert starts == [(0, "thinking"), (1, "text"), (2, "tool_use")]
    assert final.to_dict()["content"] == recorded["content"]


def test_a_thinking_block_is_signed_and_closed_before_the_next_block_starts(gateway: GatewayHarness) -> None:
    """As Anthropic streams it: thinking deltas, its signature_delta, its content_block_stop, then the next
    block (no block opened while thinking is still open)."""
    raw = read_bytes("anthropic", "stream__thinking_delta_signature_delta.sse")
    gateway.upstream.script(ANTHROPIC, Reply(200, raw, "text/event-stream"))
    events, final = streamed(client_of(gateway), messages=[{"role": "user", "content": "go"}])
    open_blocks: set[int] = set()
    signed: list[int] = []
    for event in events:
        if event["type"] == "content_block_start":
            assert not open_blocks, f"block {event['index']} started while {open_blocks} open"
            open_blocks.add(event["index"])
        elif event["type"] == "content_block_stop":
            open_blocks.discard(event["index"])
        elif event["type"] == "content_block_delta" and event["delta"]["type"] == "signature_delta":
            assert event["index"] in open_blocks
            signed.append(event["index"])
    thinking = [i for i, b in enumerate(final.content) if b.type == "thinking"]
    assert thinking and signed == thinking
    assert [b.signature for b in final.content if b.type == "thinking"] == \
        [b["signature"] for b in anthropic_message(raw)["content"] if b["type"] == "thinking"]
