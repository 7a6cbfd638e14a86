"""The official openai and anthropic SDKs, through the gateway, answered by a Bedrock upstream (recorded
Converse / ConverseStream traffic on 127.0.0.1): signed upstream requests, the key's budget charged
with Bedrock's Decimal prices, the call on the record, `metis cost --by provider` showing bedrock."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import anthropic
import openai
import pytest
from bedrock_recordings import body, index, model_of
from cli.replay_server import ANTHROPIC, ReplayServer, Reply
from typer.testing import CliRunner

from metis_core.cli.app import app

from .gateway_harness import GatewayHarness

KEY_ID, SECRET = "AKIAZ7GATEWAYTEST000", "gateway/test+secret+access+key+0123456789"


def path_of(name: str) -> str:
    return "/model/" + index()[name]["request_uri"].split("/model/", 1)[1]


@pytest.fixture
def gateway(tmp_path: Path, upstream: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[GatewayHarness]:
    for name, value in {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1",
                        "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": str(tmp_path / "none"),
                        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")}.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    harness = GatewayHarness(tmp_path / "home", upstream).start()
    yield harness
    harness.stop()


def test_anthropic_sdk_answered_by_claude_on_bedrock_with_budget_record_and_cost_by_provider(
        gateway: GatewayHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "converse_reasoning_signed"
    key_id, token = gateway.issue(budget_usd=Decimal("5"), budget_period="day")
    gateway.upstream.script(path_of(name), Reply(200, body(name), "application/json"))
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    answer = client.messages.create(model=model_of(name), max_tokens=2048,
                                    messages=[{"role": "user", "content": "How do I cross the street?"}])
    texts = [block.text for block in answer.content if block.type == "text"]
    assert texts and texts[0].startswith("Here are the basic steps")
    assert answer.usage.input_tokens == 42 and answer.usage.output_tokens == 313
    seen = gateway.upstream.requests[-1]
    assert seen.headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    assert token not in json.dumps(seen.headers)  # the client's gateway key never goes upstream
    expected = (Decimal(42) * 3 + Decimal(313) * 15) / 1_000_000  # Sonnet 4 on Bedrock: $3 in, $15 out
    assert gateway.spent_today(key_id) == expected
    [completed] = gateway.of_type("llm.call_completed")
    assert completed.payload["gateway_key_id"] == key_id and completed.payload["model"] == model_of(name)
    monkeypatch.setenv("METIS_HOME", str(gateway.runtime.home))
    result = CliRunner().invoke(app, ["cost", "--by", "provider", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["key"]: row for row in json.loads(result.output)["provider"]}
    assert rows["bedrock"]["calls"] == 1 and Decimal(rows["bedrock"]["cost_usd"]) == expected


def test_openai_sdk_streams_from_a_bedrock_converse_stream(gateway: GatewayHarness) -> None:
    name = "stream_text_nova"
    _, token = gateway.issue()
    gateway.upstream.script(path_of(name), Reply(200, body(name), "application/vnd.amazon.eventstream"))
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    chunks = list(client.chat.completions.create(
        model=model_of(name), messages=[{"role": "user", "content": "What is the capital of France?"}],
        stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("The capital of France is Paris.")
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    [usage] = [c.usage for c in chunks if not c.choices]
    assert usage is not None and usage.prompt_tokens == 13


def test_a_chain_falls_back_from_anthropic_direct_to_claude_on_bedrock(gateway: GatewayHarness) -> None:
    name = "converse_tool_result_answer"
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "error__529_overloaded_error.json", 529))
    gateway.upstream.script(path_of(name), Reply(200, body(name), "application/json"))
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    answer = client.messages.create(model=f"anthropic:claude-3-7-sonnet-latest,{model_of(name)}", max_tokens=200,
                                    messages=[{"role": "user", "content": "largest city in Mexico?"}])
    assert answer.content[0].text.startswith("Based on your location in Mexico")  # type: ignore[union-attr]
    [failed] = gateway.of_type("llm.call_failed")
    [completed] = gateway.of_type("llm.call_completed")
    assert failed.payload["model"] == "anthropic:claude-3-7-sonnet-latest"
    assert completed.payload["model"] == model_of(name)
