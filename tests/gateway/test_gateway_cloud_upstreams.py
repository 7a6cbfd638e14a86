"""The official openai and anthropic SDKs call the gateway with Azure OpenAI and Vertex AI upstreams.

The upstreams are local HTTP servers serving recorded traffic: Azure with an `api-key`, Vertex
with a token google-auth obtained by signing a service-account JWT at a local token endpoint.
Budgets, allow-lists, fallback from Anthropic direct to Claude on Vertex and the record are
checked as for direct providers; no upstream credential reaches a client or an event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import anthropic
import openai
import pytest
from cli.replay_server import ANTHROPIC, ReplayServer
from cli.replay_server import Reply as ReplayReply
from cloud_server import CloudServer, Reply
from fixture_files import read_bytes
from typer.testing import CliRunner

from metis_core.adapters.client import ModelClient
from metis_core.cli.app import app
from metis_core.transport.retry import RetryPolicy

from .gateway_harness import GatewayHarness

AZURE_KEY = "azure-upstream-SECRET-9f8e7d6c5b4a"
PROJECT = "metis-test-project"
CLAUDE_PATH = f"/v1/projects/{PROJECT}/locations/global/publishers/anthropic/models/claude-haiku-4-5@20251001"
CLOUD_DATA = Path(__file__).parents[1] / "data" / "cloud"


@pytest.fixture
def gateway(tmp_path: Path, upstream: ReplayServer, cloud: tuple[CloudServer, Path],
            monkeypatch: pytest.MonkeyPatch) -> Iterator[GatewayHarness]:
    server, key_file = cloud
    server.reset()
    for name in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION", "OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    harness = GatewayHarness(tmp_path / "home", upstream)
    harness.runtime.client = ModelClient(
        base_urls={"anthropic": upstream.base_url, "azure": server.base_url + "/openai/v1",
                   "vertex_anthropic": server.base_url},
        api_keys={"anthropic": "sk-ant-upstream-SECRET-0001", "azure": AZURE_KEY}, retry=RetryPolicy(max_retries=0))
    harness.runtime.configured_providers = {"anthropic", "azure", "vertex_anthropic"}
    harness.cloud = server  # type: ignore[attr-defined]
    yield harness.start()
    harness.stop()


def test_openai_sdk_through_the_gateway_to_azure_with_a_budget_and_the_record(gateway: GatewayHarness) -> None:
    cloud: CloudServer = gateway.cloud  # type: ignore[attr-defined]
    cloud.script("/openai/v1/chat/completions",
                 Reply(200, (CLOUD_DATA / "azure" / "chat__annotations_with_filter_results.json").read_bytes()))
    key_id, token = gateway.issue(budget_usd=Decimal("1"), budget_period="day")
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    answer = client.chat.completions.create(model="azure:gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == "Example model response will be returned "
    [sent] = cloud.calls()
    assert sent.headers["api-key"] == AZURE_KEY and token not in json.dumps(sent.headers)
    [completed] = gateway.of_type("llm.call_completed")
    one_call = Decimal("0.0004275")  # 11 input tokens at $2.50/M + 40 output at $10/M (gpt-4o list price)
    assert Decimal(str(completed.payload["cost_usd"])) == one_call
    assert gateway.spent_today(key_id) == one_call
    assert AZURE_KEY not in json.dumps([e.payload for e in gateway.events.events], default=str)


def test_anthropic_sdk_through_the_gateway_to_claude_on_vertex(gateway: GatewayHarness) -> None:
    cloud: CloudServer = gateway.cloud  # type: ignore[attr-defined]
    cloud.script(CLAUDE_PATH + ":streamRawPredict",
                 Reply(200, read_bytes("anthropic", "stream__text_basic.sse"), "text/event-stream"))
    key_id, token = gateway.issue(allowed_models=["vertex_anthropic:*"], budget_usd=Decimal("1"),
                                   budget_period="day")
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    with client.messages.stream(model="vertex_anthropic:claude-haiku-4-5@20251001", max_tokens=50,
                                messages=[{"role": "user", "content": "hi"}]) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "Hello there!"  # type: ignore[union-attr]
    [sent] = cloud.calls()
    assert sent.json()["anthropic_version"] == "vertex-2023-10-16" and "model" not in sent.json()
    assert sent.headers["authorization"] == f"Bearer {cloud.tokens_issued[-1]}"
    [completed] = gateway.of_type("llm.call_completed")
    one_call = Decimal("0.000041")  # 11 input tokens at $1/M + 6 output at $5/M (claude-haiku-4-5 list price)
    assert Decimal(str(completed.payload["cost_usd"])) == one_call and gateway.spent_today(key_id) == one_call
    with pytest.raises(anthropic.PermissionDeniedError):  # the allow-list holds across platforms
        client.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=10,
                               messages=[{"role": "user", "content": "hi"}])
    events = json.dumps([e.payload for e in gateway.events.events], default=str)
    assert cloud.tokens_issued[-1] not in events


def test_a_chain_falls_back_from_anthropic_direct_to_claude_on_vertex_and_cost_groups_by_provider(
        gateway: GatewayHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    cloud: CloudServer = gateway.cloud  # type: ignore[attr-defined]
    gateway.upstream.script(ANTHROPIC, ReplayReply.recording("anthropic", "error__529_overloaded_error.json", 529))
    cloud.script(CLAUDE_PATH + ":rawPredict", Reply(200, read_bytes("anthropic", "response__text.json")))
    _, token = gateway.issue()
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    answer = client.messages.create(
        model="anthropic:claude-haiku-4-5, vertex_anthropic:claude-haiku-4-5@20251001", max_tokens=100,
        messages=[{"role": "user", "content": "weather?"}])
    assert answer.content[0].text.startswith("The weather in SF")  # type: ignore[union-attr]
    assert len(gateway.upstream.requests) == 1 and len(cloud.calls()) == 1
    [completed] = gateway.of_type("llm.call_completed")
    assert completed.payload["model"] == "vertex_anthropic:claude-haiku-4-5@20251001"
    cloud.script("/openai/v1/chat/completions",
                 Reply(200, (CLOUD_DATA / "azure" / "chat__annotations_with_filter_results.json").read_bytes()))
    openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0).chat.completions.create(
        model="azure:gpt-4o", messages=[{"role": "user", "content": "hi"}])
    gateway.drain()
    monkeypatch.setenv("METIS_HOME", str(gateway.runtime.home))
    result = CliRunner().invoke(app, ["cost", "--by", "provider", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["key"]: row for row in json.loads(result.output)["provider"]}
    assert set(rows) == {"vertex_anthropic", "azure"}
    assert Decimal(rows["vertex_anthropic"]["cost_usd"]) == Decimal(str(completed.payload["cost_usd"]))
    assert Decimal(rows["azure"]["cost_usd"]) == Decimal("0.0004275")
