"""A fallback chain across the three platforms Claude runs on: Anthropic direct -> Claude on Bedrock
-> Claude on Vertex, for the same model, over real HTTP (Bedrock signed by botocore, Vertex with a
token google-auth obtained from a signed service-account JWT).

Mid tool loop the thinking Anthropic direct signed must reach whichever member answers, because
Claude requires the signed thinking of a turn that called a tool. Recordings: Anthropic's tool call
with signed thinking (tests/data/shared) and Bedrock's ThrottlingException as AWS documents it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cloud_server import CloudServer, Reply, only_these_cloud_credentials
from fixture_files import read_bytes

from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import RequestContext
from metis_core.adapters.client import ModelClient
from metis_core.errors import AllModelsFailedError
from metis_core.messages import ThinkingBlock, ToolDefinition, tool_result_message, user_message
from metis_core.routing.fallback import FallbackChain
from metis_core.transport.retry import RetryPolicy
from metis_core.transport.wire import WireResponse

SONNET = "claude-sonnet-4-20250514"
CHAIN = [f"anthropic:{SONNET}", f"bedrock:us.anthropic.{SONNET}-v1:0", "vertex_anthropic:claude-sonnet-4@20250514"]
ANTHROPIC_PATH = "/v1/messages"
BEDROCK_PATH = f"/model/us.anthropic.{SONNET}-v1%3A0/converse"
VERTEX_PATH = ("/v1/projects/metis-test-project/locations/global/publishers/anthropic/models/"
               "claude-sonnet-4@20250514:rawPredict")
THROTTLED = Reply(429, b'{"message":"Too many requests, please wait before trying again."}',
                  headers={"x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"})
WEATHER = ToolDefinition(name="get_weather", description="weather of a place",
                         input_schema={"type": "object", "properties": {"location": {"type": "string"}}})


@pytest.fixture
def chain(cloud: tuple[CloudServer, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FallbackChain]:
    server, key_file = cloud
    server.reset()
    only_these_cloud_credentials(monkeypatch, tmp_path, "AKIAZ7CHAINTEST00000", "chain/test+secret+0123", key_file)
    base = server.base_url
    with ModelClient(base_urls={"anthropic": base, "bedrock": base, "vertex_anthropic": base},
                     api_keys={"anthropic": "sk-ant-chain-SECRET-0001"}, retry=RetryPolicy(max_retries=0)) as client:
        yield FallbackChain(client, CHAIN)


def history_mid_tool_loop() -> tuple[list, str]:
    """Anthropic direct's recorded tool call with signed thinking, then the tool's result."""
    call = AnthropicAdapter().from_wire_response(
        WireResponse(200, read_bytes("anthropic", "response__tool_use_with_thinking.json"), {}),
        RequestContext(f"anthropic:{SONNET}"))
    [thinking] = [b for b in call.content if isinstance(b, ThinkingBlock)]
    [tool_use] = call.tool_uses()
    assert thinking.signature
    return [user_message("weather in Paris?"), call, tool_result_message(tool_use.id, "18 C, sunny")], \
        thinking.signature


def test_the_signed_thinking_follows_the_turn_down_the_chain_to_bedrock_and_vertex(
        chain: FallbackChain, cloud: tuple[CloudServer, Path]) -> None:
    server, _ = cloud
    server.script(ANTHROPIC_PATH, Reply(529, read_bytes("anthropic", "error__529_overloaded_error.json")))
    server.script(BEDROCK_PATH, THROTTLED)
    server.script(VERTEX_PATH, Reply(200, read_bytes("anthropic", "response__text.json")))
    history, signature = history_mid_tool_loop()
    answer = chain.complete(history, tools=[WEATHER])
    assert answer.metadata.model == CHAIN[2] and answer.metadata.provider == "vertex_anthropic"
    anthropic_sent, bedrock_sent, vertex_sent = (server.calls(p)[0].json()
                                                 for p in (ANTHROPIC_PATH, BEDROCK_PATH, VERTEX_PATH))
    assert anthropic_sent["messages"][1]["content"][0]["signature"] == signature
    assert bedrock_sent["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["signature"] == signature
    assert vertex_sent["messages"][1]["content"][0] == {
        "type": "thinking", "thinking": history[1].content[0].text, "signature": signature}
    tool_use = bedrock_sent["messages"][1]["content"][-1]["toolUse"]
    assert bedrock_sent["messages"][2]["content"][0]["toolResult"]["toolUseId"] == tool_use["toolUseId"]
    assert server.calls(BEDROCK_PATH)[0].headers["authorization"].startswith("AWS4-HMAC-SHA256 ")
    assert server.calls(VERTEX_PATH)[0].headers["authorization"] == f"Bearer {server.tokens_issued[-1]}"


def test_a_non_claude_bedrock_member_gets_the_turn_without_the_signed_thinking(
        chain: FallbackChain, cloud: tuple[CloudServer, Path]) -> None:
    server, _ = cloud
    nova = "/model/us.amazon.nova-pro-v1%3A0/converse"
    server.script(ANTHROPIC_PATH, Reply(529, read_bytes("anthropic", "error__529_overloaded_error.json")))
    server.script(nova, THROTTLED)
    history, _ = history_mid_tool_loop()
    with pytest.raises(AllModelsFailedError):
        FallbackChain(chain.client, [CHAIN[0], "bedrock:us.amazon.nova-pro-v1:0"]).complete(history, tools=[WEATHER])
    sent = server.calls(nova)[0].json()["messages"][1]["content"]
    assert [next(iter(block)) for block in sent] == ["text", "toolUse"]  # the thinking dropped and logged
