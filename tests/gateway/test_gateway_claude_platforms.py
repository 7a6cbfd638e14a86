"""One Claude model on its three platforms behind the gateway: a chain Anthropic direct -> Claude on
Bedrock -> Claude on Vertex answers from whichever member is up, each call is charged to the key at
that platform's Decimal price, and `metis cost --by provider` splits the spend across the three.

Upstreams: the replay server (Anthropic, and Bedrock with its SigV4 check) and the cloud server
(Vertex, with google-auth's signed service-account JWT); all answers are recordings.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anthropic
import pytest
from bedrock_recordings import body, index
from cli.replay_server import ANTHROPIC, ReplayServer
from cli.replay_server import Reply as ReplayReply
from cloud_server import CloudServer, Reply, only_these_cloud_credentials, serving_cloud
from fixture_files import read_bytes
from typer.testing import CliRunner

from metis_core.adapters.client import ModelClient
from metis_core.cli.app import app
from metis_core.transport.retry import RetryPolicy

from .gateway_harness import UPSTREAM_KEYS, GatewayHarness

SONNET = "claude-sonnet-4-20250514"
CHAIN = f"anthropic:{SONNET}, bedrock:us.anthropic.{SONNET}-v1:0, vertex_anthropic:claude-sonnet-4@20250514"
BEDROCK_PATH = f"/model/us.anthropic.{SONNET}-v1%3A0/converse"
VERTEX_PATH = ("/v1/projects/metis-test-project/locations/global/publishers/anthropic/models/"
               "claude-sonnet-4@20250514:rawPredict")
OVERLOADED = ReplayReply.recording("anthropic", "error__529_overloaded_error.json", 529)


@pytest.fixture
def gateway(tmp_path: Path, upstream: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[GatewayHarness]:
    cloud, key_file = serving_cloud(tmp_path)
    only_these_cloud_credentials(monkeypatch, tmp_path, "AKIAZ7PLATFORMS00000", "platforms/test+secret", key_file)
    harness = GatewayHarness(tmp_path / "home", upstream)
    harness.runtime.client = ModelClient(
        base_urls={"anthropic": upstream.base_url, "bedrock": upstream.base_url, "vertex_anthropic": cloud.base_url},
        api_keys=UPSTREAM_KEYS, retry=RetryPolicy(max_retries=0))
    harness.runtime.configured_providers |= {"bedrock", "vertex_anthropic"}
    harness.cloud = cloud  # type: ignore[attr-defined]
    yield harness.start()
    harness.stop()
    cloud.stop()


def test_a_claude_chain_across_three_platforms_charges_each_and_cost_splits_by_provider(
        gateway: GatewayHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    cloud: CloudServer = gateway.cloud  # type: ignore[attr-defined]
    up = gateway.upstream
    up.script(ANTHROPIC, ReplayReply.recording("anthropic", "response__text.json"), OVERLOADED, OVERLOADED)
    up.script(BEDROCK_PATH, ReplayReply(200, body("converse_reasoning_signed"), "application/json"),
              ReplayReply(429, b'{"message":"Too many requests, please wait before trying again."}',
                          "application/json", headers={"x-amzn-ErrorType": "ThrottlingException"}))
    cloud.script(VERTEX_PATH, Reply(200, read_bytes("anthropic", "response__text.json")))
    key_id, token = gateway.issue(budget_usd=Decimal("5"), budget_period="day")
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    for _ in range(3):  # up; Anthropic overloaded; Anthropic overloaded and Bedrock throttled
        client.messages.create(model=CHAIN, max_tokens=500, messages=[{"role": "user", "content": "hi"}])
    completed = gateway.of_type("llm.call_completed")
    assert [e.payload["model"].partition(":")[0] for e in completed] == ["anthropic", "bedrock", "vertex_anthropic"]
    costs = {e.payload["model"].partition(":")[0]: Decimal(str(e.payload["cost_usd"])) for e in completed}
    assert costs["bedrock"] == (Decimal(42) * 3 + Decimal(313) * 15) / 1_000_000  # Sonnet 4 on Bedrock
    assert costs["anthropic"] == costs["vertex_anthropic"] == (Decimal(705) * 3 + Decimal(25) * 15) / 1_000_000
    assert gateway.spent_today(key_id) == sum(costs.values())
    gateway.drain()
    monkeypatch.setenv("METIS_HOME", str(gateway.runtime.home))
    result = CliRunner().invoke(app, ["cost", "--by", "provider", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["key"]: row for row in json.loads(result.output)["provider"]}
    assert {key: Decimal(row["cost_usd"]) for key, row in rows.items()} == costs
    assert all(row["calls"] == 1 for row in rows.values())


def test_an_anthropic_sdk_tool_loop_with_thinking_on_claude_on_bedrock_replays_the_signed_thinking(
        gateway: GatewayHarness) -> None:
    """pydantic-ai's recorded pair: Claude on Bedrock thinks and calls a tool, then answers from its result.
    The client gets the signed thinking back and replays it; Bedrock gets it as reasoningContent."""
    model = "bedrock:us.anthropic.claude-3-7-sonnet-20250219-v1:0"
    path = "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse"
    gateway.upstream.script(path, ReplayReply(200, body("converse_tool_use_with_reasoning"), "application/json"),
                            ReplayReply(200, body("converse_tool_result_answer"), "application/json"))
    _, token = gateway.issue()
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    tools: list[Any] = [{"name": "get_user_country", "description": "the user's country",
                         "input_schema": {"type": "object", "properties": {}}}]
    ask: list[Any] = [{"role": "user", "content": "What is the largest city in the user country?"}]
    thinking: Any = {"type": "enabled", "budget_tokens": 1024}
    first = client.messages.create(model=model, max_tokens=2048, thinking=thinking, tools=tools, messages=ask)
    assert [b.type for b in first.content] == ["thinking", "text", "tool_use"]
    recorded = index()["converse_tool_result_answer"]["request_body"]["messages"][1]["content"][0]
    assert first.content[0].signature == recorded["reasoningContent"]["reasoningText"]["signature"]  # type: ignore[union-attr]
    call = first.content[2]
    second = client.messages.create(model=model, max_tokens=2048, thinking=thinking, tools=tools, messages=[
        *ask, {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Mexico"}]}])  # type: ignore[union-attr]
    assert second.content[-1].text.startswith("Based on your location in Mexico")  # type: ignore[union-attr]
    sent = json.loads(gateway.upstream.requests[-1].raw)["messages"][1]["content"]
    assert sent[0] == recorded  # the signed reasoning, as Bedrock issued it


def test_a_streamed_bedrock_answer_gives_an_anthropic_sdk_client_the_signed_thinking(gateway: GatewayHarness) -> None:
    name = "stream_reasoning_signed"
    gateway.upstream.script(f"/model/us.anthropic.{SONNET}-v1%3A0/converse-stream",
                            ReplayReply(200, body(name), "application/vnd.amazon.eventstream"))
    _, token = gateway.issue()
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    with client.messages.stream(model=f"bedrock:us.anthropic.{SONNET}-v1:0", max_tokens=2048,
                                thinking={"type": "enabled", "budget_tokens": 1024},
                                messages=[{"role": "user", "content": "Hello!"}]) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "text"]
    assert final.content[0].signature.startswith("Eu0CCkgIBxAB")  # type: ignore[union-attr]  # Bedrock's, whole


def test_claude_on_vertex_gives_an_anthropic_sdk_client_its_signed_thinking(gateway: GatewayHarness) -> None:
    cloud: CloudServer = gateway.cloud  # type: ignore[attr-defined]
    recorded = read_bytes("anthropic", "response__thinking_with_signature.json")
    cloud.script(VERTEX_PATH.replace("claude-sonnet-4@20250514", "claude-sonnet-4-5@20250929"), Reply(200, recorded))
    _, token = gateway.issue()
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    answer = client.messages.create(model="vertex_anthropic:claude-sonnet-4-5@20250929", max_tokens=2048,
                                    thinking={"type": "enabled", "budget_tokens": 1024},
                                    messages=[{"role": "user", "content": "hi"}])
    [signed] = [b for b in json.loads(recorded)["content"] if b["type"] == "thinking"]
    assert answer.content[0].type == "thinking" and answer.content[0].signature == signed["signature"]
