"""Azure OpenAI over real HTTP: the v1 and api-version endpoints, `api-key` and Entra ID tokens, content
filter results on the record, a filtered answer as a refusal, named errors, Responses on Azure.

Recordings: tests/data/cloud/azure (PROVENANCE.md) and the OpenAI Responses recordings, whose
bodies Azure returns unchanged. Entra ID is exercised at the azure-identity boundary: a credential
object with `get_token`, as azure-identity's credentials have.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cloud_server import CloudServer, Reply
from fixture_files import read_bytes
from session_samples import assistant

from metis_core.adapters.azure_openai.adapter import AzureResponsesAdapter
from metis_core.adapters.azure_openai.auth import EntraTokenSource
from metis_core.adapters.azure_openai.endpoint import azure_url
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.client import ModelClient
from metis_core.adapters.cloud_errors import (
    CloudCredentialsError,
    CloudExtraMissingError,
    ContentFilterBlockedError,
    ModelNotEnabledError,
)
from metis_core.config import load_config
from metis_core.errors import RateLimitError
from metis_core.messages import BlockOrigin, Message, Role, TextBlock, ThinkingBlock
from metis_core.transport.retry import RetryPolicy

AZURE = Path(__file__).parents[2] / "data" / "cloud" / "azure"
KEY = "azure-key-5f1c0e9b7a3d4c2e8f6a1b0c"
V1_CHAT = "/openai/v1/chat/completions"


class FakeEntraCredential:
    """Stands in for azure.identity.DefaultAzureCredential: counts calls, hands out expiring tokens."""

    def __init__(self, lifetime: float = 3600.0, fail: Exception | None = None) -> None:
        self.lifetime = lifetime
        self.fail = fail
        self.calls: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        self.calls.append(scopes)
        if self.fail is not None:
            raise self.fail
        return SimpleNamespace(token=f"eyJ0eXAiOiJKV1Qi.entra-token-{len(self.calls)}.sig",
                               expires_on=int(time.time() + self.lifetime))


@pytest.fixture(scope="module")
def server() -> Iterator[CloudServer]:
    cloud = CloudServer()
    yield cloud
    cloud.stop()


@pytest.fixture
def azure(server: CloudServer, monkeypatch: pytest.MonkeyPatch) -> CloudServer:
    server.reset()
    for name in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_API_VERSION", "OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.base_url + "/openai/v1/")
    monkeypatch.setenv("METIS_AZURE_RESPONSES_BASE_URL", server.base_url + "/openai/v1")
    return server


def client(tmp_path: Path) -> ModelClient:
    return ModelClient(config=load_config(tmp_path), retry=RetryPolicy(max_retries=0))


def ask(text: str = "hello") -> list[Message]:
    return [Message(role=Role.USER, content=[TextBlock(text=text)])]


def test_chat_with_api_key_on_the_v1_endpoint_keeps_filter_results(azure: CloudServer, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    azure.script(V1_CHAT, Reply(200, (AZURE / "chat__annotations_with_filter_results.json").read_bytes()))
    with client(tmp_path) as models:
        answer = models.complete(ask(), "azure:gpt-4o")
    sent = azure.calls()[0]
    assert sent.headers["api-key"] == KEY and "authorization" not in sent.headers
    assert sent.json()["model"] == "gpt-4o"  # the deployment name
    assert answer.content[0].text == "Example model response will be returned "  # type: ignore[union-attr]
    record = answer.metadata.provider_raw["content_filter"]  # type: ignore[index]
    assert record["prompt"][0]["content_filter_results"]["jailbreak"] == {"detected": False, "filtered": False}
    assert record["completion"]["protected_material_code"]["detected"] is True
    assert answer.metadata.usage is not None and answer.metadata.usage.cost_usd is not None  # priced as gpt-4o


def test_stream_with_entra_token_on_the_api_version_endpoint(azure: CloudServer, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", azure.base_url)
    monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")
    path = "/openai/deployments/prod-mini/chat/completions?api-version=2024-10-21"
    recording = (AZURE / "chat_stream__gpt-5.4-mini_with_filter_results.sse").read_bytes()
    azure.script(path, Reply(200, recording, "text/event-stream"), Reply(200, recording, "text/event-stream"))
    credential = FakeEntraCredential()
    with client(tmp_path) as models:
        models.adapter("azure").tokens = EntraTokenSource("azure", credential)  # type: ignore[attr-defined]
        events = list(models.stream(ask(), "azure:prod-mini"))
        list(models.stream(ask(), "azure:prod-mini"))
    final = events[-1].message  # type: ignore[union-attr]
    assert "".join(b.text for b in final.content) == "Hi! How can I help?"  # type: ignore[union-attr]
    assert final.metadata.usage.output_tokens == 11
    assert final.metadata.provider_raw["content_filter"]["prompt"][0]["prompt_index"] == 0
    assert credential.calls == [("https://cognitiveservices.azure.com/.default",)], "one token, reused"
    assert {c.headers["authorization"] for c in azure.calls()} == {"Bearer eyJ0eXAiOiJKV1Qi.entra-token-1.sig"}


def test_an_answer_cut_by_the_content_filter_is_a_named_refusal(azure: CloudServer, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    azure.script(V1_CHAT, Reply(200, (AZURE / "chat_stream__finish_content_filter.sse").read_bytes(),
                                "text/event-stream"))
    with client(tmp_path) as models:
        final = list(models.stream(ask(), "azure:prod-mini"))[-1].message  # type: ignore[union-attr]
    assert final.metadata.stop_reason == "refusal"
    assert final.metadata.provider_raw["refusal"] == {"by": "azure_content_filter", "categories": ["violence"]}


def test_named_errors_for_filter_block_throttling_missing_deployment_and_bad_key(
        azure: CloudServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    throttled = {"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure "
                           "OpenAI API version 2024-10-21 have exceeded token rate limit of your current AIServices "
                           "S0 pricing tier. Please retry after 7 seconds."}}
    missing = {"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not "
                         "exist. If you created the deployment within the last 5 minutes, please wait a moment "
                         "and try again."}}
    echoed = {"error": {"code": "401", "message": f"Access denied due to invalid subscription key {KEY}."}}
    azure.script(V1_CHAT,
                 Reply(400, (AZURE / "error__400_content_filter.json").read_bytes()),
                 Reply(429, json.dumps(throttled).encode(), headers={"retry-after": "7"}),
                 Reply(404, json.dumps(missing).encode()),
                 Reply(401, json.dumps(echoed).encode()))
    with client(tmp_path) as models:
        with pytest.raises(ContentFilterBlockedError, match="self_harm") as blocked:
            models.complete(ask(), "azure:gpt-4o")
        assert blocked.value.filter_results["self_harm"] == {"filtered": True, "severity": "medium"}
        with pytest.raises(RateLimitError, match="retry after 7 s") as limited:
            models.complete(ask(), "azure:gpt-4o")
        assert limited.value.retry_after == 7.0
        with pytest.raises(ModelNotEnabledError, match="deployment"):
            models.complete(ask(), "azure:gpt-4o")
        with pytest.raises(CloudCredentialsError, match="az login") as refused:
            models.complete(ask(), "azure:gpt-4o")
    assert KEY not in str(refused.value)


def test_entra_failures_and_a_missing_azure_identity_say_what_to_do(azure: CloudServer, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    secretish = "refresh-token-7c1d9e0f2a3b4c5d"
    failing = FakeEntraCredential(fail=RuntimeError(f"AADSTS700082: the refresh token {secretish} has expired"))
    with client(tmp_path) as models:
        models.adapter("azure").tokens = EntraTokenSource("azure", failing)  # type: ignore[attr-defined]
        with pytest.raises(CloudCredentialsError, match="az login") as expired:
            models.complete(ask(), "azure:gpt-4o")
    assert secretish not in str(expired.value) and expired.value.__cause__ is None
    monkeypatch.setitem(sys.modules, "azure.identity", None)
    with client(tmp_path) as models, pytest.raises(CloudExtraMissingError, match=r"metis-core\[azure\]"):
        models.complete(ask(), "azure:gpt-4o")
    assert not azure.calls()


def test_responses_on_azure_round_trip_replays_reasoning_to_the_same_deployment_only(
        azure: CloudServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    azure.script("/openai/v1/responses",
                 Reply(200, read_bytes("openai_responses", "response__reasoning_encrypted_content_summary.json")))
    with client(tmp_path) as models:
        answer = models.complete(ask(), "azure_responses:gpt-5")
    sent = azure.calls()[0].json()
    assert sent["model"] == "gpt-5" and sent["include"] == ["reasoning.encrypted_content"]  # replayable
    reasoning = [b for b in answer.content if isinstance(b, ThinkingBlock)]
    assert reasoning and reasoning[0].origin is not None and reasoning[0].origin.provider == "azure_responses"
    adapter = AzureResponsesAdapter()
    history = [*ask(), answer, *ask("more")]
    same = adapter.to_wire(history, [], AdapterOptions(model="azure_responses:gpt-5"))
    assert any(item.get("type") == "reasoning" for item in same.body["input"]) and not same.dropped
    other = adapter.to_wire(history, [], AdapterOptions(model="azure_responses:gpt-5-eu"))
    assert not any(item.get("type") == "reasoning" for item in other.body["input"]) and other.dropped
    direct = assistant("", [ThinkingBlock(text="t", signature="enc", origin=BlockOrigin(
        provider="openai_responses", api="responses", model="gpt-5")), TextBlock(text="x")], provider="openai")
    crossed = adapter.to_wire([*ask(), direct, *ask("more")], [], AdapterOptions(model="azure_responses:gpt-5"))
    assert crossed.dropped, "reasoning encrypted by OpenAI direct is not replayed to an Azure deployment"


@pytest.mark.parametrize(("base", "version", "expected"), [
    ("https://res.openai.azure.com/openai/v1", "", "https://res.openai.azure.com/openai/v1/chat/completions"),
    ("https://res.openai.azure.com", "", "https://res.openai.azure.com/openai/v1/chat/completions"),
    ("https://res.services.ai.azure.com/openai/v1", "preview",
     "https://res.services.ai.azure.com/openai/v1/chat/completions?api-version=preview"),
    ("https://res.openai.azure.com/openai", "2024-10-21",
     "https://res.openai.azure.com/openai/deployments/my%2Fdep/chat/completions?api-version=2024-10-21"),
])
def test_endpoint_forms(base: str, version: str, expected: str) -> None:
    assert azure_url(base, "/chat/completions", "my/dep", {}, version) == expected
    responses = azure_url(base, "/responses", "my/dep", {}, version)
    assert "/deployments/" not in responses and responses.split("?")[0].endswith("/responses")


def test_cloud_providers_need_no_key_and_count_as_configured_once_set_up(tmp_path: Path) -> None:
    bare = load_config(tmp_path, environ={})
    assert bare.require_api_key("azure") is None and bare.require_api_key("vertex_anthropic") is None
    assert not bare.cloud_configured("azure") and not bare.cloud_configured("vertex")
    assert not bare.cloud_configured("openai")
    set_up = load_config(tmp_path, environ={"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com",
                                            "GOOGLE_CLOUD_PROJECT": "p"})
    assert set_up.cloud_configured("azure_responses") and set_up.cloud_configured("vertex_anthropic")
    assert set_up.base_url("azure") == "https://r.openai.azure.com"
    assert set_up.base_url("vertex") == "https://aiplatform.googleapis.com"


def test_a_second_azure_resource_as_a_named_provider(azure: CloudServer, tmp_path: Path) -> None:
    port = azure.base_url.rsplit(":", 1)[1]
    environ = {"METIS_PROVIDER_WESTEU": f"azure+http://{KEY}@127.0.0.1:{port}/openai/v1"}
    azure.script(V1_CHAT, Reply(200, (AZURE / "chat__annotations_with_filter_results.json").read_bytes()))
    with ModelClient(config=load_config(tmp_path, environ=environ), retry=RetryPolicy(max_retries=0)) as models:
        answer = models.complete(ask(), "westeu:gpt-4o")
    assert azure.calls()[0].headers["api-key"] == KEY
    assert answer.metadata.provider == "westeu" and "content_filter" in (answer.metadata.provider_raw or {})
    assert answer.metadata.usage is not None and answer.metadata.usage.cost_usd is not None


def test_an_async_call_fetches_the_token_off_the_event_loop(azure: CloudServer, tmp_path: Path) -> None:
    import asyncio
    import threading

    class ThreadNoting(FakeEntraCredential):
        def get_token(self, *scopes: str, **kwargs: Any) -> Any:
            self.thread = threading.current_thread()
            return super().get_token(*scopes, **kwargs)

    azure.script(V1_CHAT, Reply(200, (AZURE / "chat__annotations_with_filter_results.json").read_bytes()),
                 Reply(200, (AZURE / "chat_stream__gpt-5.4-mini_with_filter_results.sse").read_bytes(),
                       "text/event-stream"))
    credential = ThreadNoting(lifetime=0)  # expired at once: every call fetches a token

    async def calls() -> tuple[Message, list[Any]]:
        async with ModelClient(config=load_config(tmp_path), retry=RetryPolicy(max_retries=0),
                               async_http="httpx") as models:
            models.adapter("azure").tokens = EntraTokenSource("azure", credential)  # type: ignore[attr-defined]
            answer = await models.acomplete(ask(), "azure:gpt-4o")
            assert credential.thread is not threading.main_thread()
            credential.thread = threading.main_thread()
            events = [e async for e in models.astream(ask(), "azure:gpt-4o")]
            return answer, events

    answer, events = asyncio.run(calls())
    assert answer.content and events[-1].message.content  # type: ignore[union-attr]
    assert credential.thread is not threading.main_thread()
    assert [c.headers["authorization"] for c in azure.calls()] == [
        "Bearer eyJ0eXAiOiJKV1Qi.entra-token-1.sig", "Bearer eyJ0eXAiOiJKV1Qi.entra-token-2.sig"]
