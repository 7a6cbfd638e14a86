"""The official openai and anthropic SDKs, pointed at a running gateway, over recorded upstream traffic.

Each test scripts the upstream with a real recording, sends through the SDK, and checks that the
SDK's own parser accepted what the gateway wrote and that the upstream got a request in its own
shape (with the gateway's provider key, never the client's).
"""

from __future__ import annotations

import anthropic
import openai
import pytest
from cli.replay_server import ANTHROPIC, OPENAI, Reply
from fixture_files import read_json

from .gateway_harness import UPSTREAM_KEYS, GatewayHarness


def anthropic_client(gateway: GatewayHarness, token: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)


def openai_client(gateway: GatewayHarness, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)


def test_anthropic_sdk_message_round_trip(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "response__text.json"))
    answer = anthropic_client(gateway, token).messages.create(
        model="anthropic:claude-haiku-4-5", max_tokens=100, messages=[{"role": "user", "content": "weather?"}])
    assert answer.content[0].type == "text"
    assert answer.content[0].text.startswith("The weather in SF")
    assert answer.stop_reason == "end_turn"
    assert answer.usage.input_tokens == 705 and answer.usage.output_tokens == 25
    seen = gateway.upstream.requests[-1]
    assert seen.headers["x-api-key"] == UPSTREAM_KEYS["anthropic"]
    assert seen.body["model"] == "claude-haiku-4-5"


def test_anthropic_sdk_stream_is_parsed_event_by_event(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    client = anthropic_client(gateway, token)
    with client.messages.stream(model="anthropic:claude-haiku-4-5", max_tokens=50,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(texts) == "Hello there!"
    assert final.content[0].text == "Hello there!"
    assert final.stop_reason == "end_turn"


def test_openai_sdk_chat_completion(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__text.json"))
    answer = openai_client(gateway, token).chat.completions.create(
        model="openai:gpt-4o", messages=[{"role": "user", "content": "weather in SF?"}])
    assert answer.choices[0].message.content.startswith("I'm unable to provide real-time weather")
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and answer.usage.prompt_tokens == 14
    seen = gateway.upstream.requests[-1]
    assert seen.headers["authorization"] == f"Bearer {UPSTREAM_KEYS['openai']}"


@pytest.mark.parametrize("include_usage", [True, False])
def test_openai_sdk_chat_stream(gateway: GatewayHarness, include_usage: bool) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    stream = openai_client(gateway, token).chat.completions.create(
        model="openai:gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True,
        stream_options={"include_usage": include_usage})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    usage_chunks = [c for c in chunks if not c.choices]
    assert (len(usage_chunks) == 1 and usage_chunks[0].usage is not None) == include_usage
    assert read_json  # the recording is real traffic read from the shared fixtures
