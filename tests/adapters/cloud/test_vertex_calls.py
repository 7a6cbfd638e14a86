"""Vertex AI over real HTTP: Application Default Credentials from a service-account file (google-auth
signs a JWT, the local token endpoint checks it), Gemini and Claude bodies, paths, regions, errors.

Recordings: Vertex's own (tests/data/cloud/vertex, PROVENANCE.md) and the Gemini and Anthropic
recordings, whose bodies Vertex returns unchanged.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cloud_server import TOKEN_PATH, CloudServer, Reply, service_account_file
from fixture_files import read_bytes
from session_samples import assistant

from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.client import ModelClient
from metis_core.adapters.cloud_errors import CloudCredentialsError, CloudExtraMissingError, ModelNotEnabledError
from metis_core.adapters.vertex.adapter import VertexAnthropicAdapter
from metis_core.adapters.vertex.endpoint import vertex_url
from metis_core.config import load_config
from metis_core.errors import ConfigError, RateLimitError
from metis_core.messages import BlockOrigin, Message, Role, TextBlock, ThinkingBlock, ToolDefinition
from metis_core.transport.retry import RetryPolicy

CLOUD = Path(__file__).parents[2] / "data" / "cloud" / "vertex"
PROJECT = "metis-test-project"
GEMINI = f"/v1/projects/{PROJECT}/locations/global/publishers/google/models/gemini-2.5-flash"
CLAUDE = f"/v1/projects/{PROJECT}/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[CloudServer, Path]]:
    directory = tmp_path_factory.mktemp("adc")
    cloud = CloudServer()
    key_file, public_pem = service_account_file(directory, cloud.base_url + TOKEN_PATH)
    cloud.public_key_pem = public_pem
    yield cloud, key_file
    cloud.stop()


@pytest.fixture
def vertex(server: tuple[CloudServer, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[CloudServer]:
    cloud, key_file = server
    cloud.reset()
    for name in ("GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    monkeypatch.setenv("METIS_VERTEX_BASE_URL", cloud.base_url)
    monkeypatch.setenv("METIS_VERTEX_ANTHROPIC_BASE_URL", cloud.base_url)
    yield cloud


def client(tmp_path: Path) -> ModelClient:
    return ModelClient(config=load_config(tmp_path), retry=RetryPolicy(max_retries=0))


def ask(text: str = "hello") -> list[Message]:
    return [Message(role=Role.USER, content=[TextBlock(text=text)])]


def test_gemini_on_vertex_uses_adc_from_a_service_account_and_the_global_endpoint(vertex: CloudServer,
                                                                                  tmp_path: Path) -> None:
    body = (CLOUD / "gemini__global_generate_content.json").read_bytes()
    vertex.script(GEMINI + ":generateContent", Reply(200, body), Reply(200, body))
    with client(tmp_path) as models:
        first = models.complete(ask(), "vertex:gemini-2.5-flash")
        models.complete(ask(), "vertex:gemini-2.5-flash")
    assert first.content[0].text.startswith("안녕하세요")  # type: ignore[union-attr]
    assert first.metadata.usage is not None and first.metadata.usage.input_tokens == 13
    assert first.metadata.usage.cost_usd is not None  # priced as gemini:gemini-2.5-flash
    calls = vertex.calls()
    assert len(vertex.tokens_issued) == 1, "the token is fetched once and reused while valid"
    assert all(c.headers["authorization"] == f"Bearer {vertex.tokens_issued[0]}" for c in calls)
    assert "contents" in calls[0].json() and "model" not in calls[0].json()
    assert first.content and first.metadata.provider == "vertex"


def test_gemini_stream_goes_to_stream_generate_content_with_alt_sse(vertex: CloudServer, tmp_path: Path) -> None:
    vertex.script(GEMINI + ":streamGenerateContent?alt=sse",
                  Reply(200, read_bytes("gemini", "stream__text.sse"), "text/event-stream"))
    with client(tmp_path) as models:
        events = list(models.stream(ask(), "vertex:gemini-2.5-flash"))
    final = events[-1].message  # type: ignore[union-attr]
    assert final.metadata.stop_reason == "end_turn" and final.content


def test_claude_on_vertex_sends_anthropic_version_in_the_body_and_no_model(vertex: CloudServer,
                                                                          tmp_path: Path) -> None:
    vertex.script(CLAUDE + ":rawPredict", Reply(200, read_bytes("anthropic", "response__thinking_with_signature.json")))
    with client(tmp_path) as models:
        answer = models.complete(ask(), "vertex_anthropic:claude-sonnet-4-5@20250929",
                                 options=AdapterOptions(model="", thinking_budget_tokens=2048))
    sent = vertex.calls()[0]
    assert sent.json()["anthropic_version"] == "vertex-2023-10-16"
    assert "model" not in sent.json() and "anthropic-version" not in sent.headers
    thinking = [b for b in answer.content if isinstance(b, ThinkingBlock)]
    assert thinking and thinking[0].signature
    assert thinking[0].origin == BlockOrigin(provider="vertex_anthropic", api="messages",
                                             model="claude-sonnet-4-5@20250929")


def test_a_vertex_round_trip_sends_back_every_signature(vertex: CloudServer, tmp_path: Path) -> None:
    gemini_answer = read_bytes("gemini", "response__function_call_thought_signature.json")
    vertex.script(GEMINI + ":generateContent", Reply(200, gemini_answer))
    vertex.script(CLAUDE + ":rawPredict", Reply(200, read_bytes("anthropic", "response__thinking_with_signature.json")))
    multiply = ToolDefinition(name="multiply", description="a*b", input_schema={
        "type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}})
    with client(tmp_path) as models:
        gemini = models.complete(ask(), "vertex:gemini-2.5-flash", tools=[multiply])
        claude = models.complete(ask(), "vertex_anthropic:claude-sonnet-4-5@20250929")
        gemini_again = models.adapter("vertex").to_wire([*ask(), gemini], [multiply],
                                                        AdapterOptions(model="vertex:gemini-2.5-flash"))
        claude_again = models.adapter("vertex_anthropic").to_wire(
            [*ask(), claude, *ask("more")], [], AdapterOptions(model="vertex_anthropic:claude-sonnet-4-5@20250929"))
    recorded = json.loads(gemini_answer)["candidates"][0]["content"]["parts"]
    sent = gemini_again.body["contents"][1]["parts"]
    def signature_bytes(parts: list[dict[str, str]]) -> list[bytes]:  # base64 or base64url: the same bytes
        return [base64.b64decode(p["thoughtSignature"].replace("-", "+").replace("_", "/"))
                for p in parts if "thoughtSignature" in p]

    assert signature_bytes(sent) == signature_bytes(recorded) != []
    assert not gemini_again.dropped and not claude_again.dropped
    signed = [b for b in claude.content if isinstance(b, ThinkingBlock)]
    assert claude_again.body["messages"][1]["content"][0]["signature"] == signed[0].signature


def test_claude_stream_uses_stream_raw_predict(vertex: CloudServer, tmp_path: Path) -> None:
    vertex.script(CLAUDE + ":streamRawPredict",
                  Reply(200, read_bytes("anthropic", "stream__cache_read_usage.sse"), "text/event-stream"))
    with client(tmp_path) as models:
        events = list(models.stream(ask(), "vertex_anthropic:claude-sonnet-4-5@20250929"))
    assert vertex.calls()[0].json()["stream"] is True
    assert events[-1].message.metadata.stop_reason  # type: ignore[union-attr]


def _signed(provider: str, model: str) -> Message:
    return assistant("", [
        ThinkingBlock(text="plan", signature="EqQBCkYIBxgCKkB-sig", origin=BlockOrigin(provider=provider,
                                                                                      api="messages", model=model)),
        TextBlock(text="done")], provider=provider)


@pytest.mark.parametrize(("provider", "model", "kept"), [
    ("anthropic", "claude-sonnet-4-5-20250929", True),         # Anthropic direct -> Vertex: same model
    ("vertex_anthropic", "claude-sonnet-4-5@20250929", True),  # Vertex -> Vertex
    ("anthropic", "claude-opus-4-1-20250805", False),          # another model: dropped and logged
    ("openrouter", "claude-sonnet-4-5@20250929", False),       # another platform's signature
])
def test_claude_thinking_signatures_across_anthropic_and_vertex(provider: str, model: str, kept: bool) -> None:
    adapter = VertexAnthropicAdapter()
    history = [*ask(), _signed(provider, model), *ask("again")]
    request = adapter.to_wire(history, [], AdapterOptions(model="vertex_anthropic:claude-sonnet-4-5@20250929"))
    blocks = request.body["messages"][1]["content"]
    assert any(b.get("type") == "thinking" for b in blocks) is kept
    assert bool(request.dropped) is not kept
    assert history[1].content[0].origin.provider == provider  # type: ignore[union-attr]  # caller's copy untouched


def test_claude_thinking_signed_on_vertex_replays_to_anthropic_direct_for_the_same_model() -> None:
    from metis_core.adapters.anthropic.adapter import AnthropicAdapter

    history = [*ask(), _signed("vertex_anthropic", "claude-sonnet-4-5@20250929"), *ask("again")]
    same = AnthropicAdapter().to_wire(history, [], AdapterOptions(model="anthropic:claude-sonnet-4-5-20250929"))
    assert same.body["messages"][1]["content"][0]["signature"] == "EqQBCkYIBxgCKkB-sig" and not same.dropped
    other = AnthropicAdapter().to_wire(history, [], AdapterOptions(model="anthropic:claude-opus-4-1-20250805"))
    assert other.body["messages"][1]["content"][0]["type"] == "text" and other.dropped


def test_regional_and_global_hosts() -> None:
    default = "https://aiplatform.googleapis.com"
    path = "/publishers/google/models/gemini-2.5-pro:generateContent"
    regional = vertex_url(default, path, {}, lambda: "p1", "vertex", environ={"GOOGLE_CLOUD_LOCATION": "us-east5"})
    assert regional == ("https://us-east5-aiplatform.googleapis.com/v1/projects/p1/locations/us-east5"
                        "/publishers/google/models/gemini-2.5-pro:generateContent")
    on_global = vertex_url(default, path, {"alt": "sse"}, lambda: "p1", "vertex",
                           environ={"CLOUD_ML_REGION": "global", "GOOGLE_CLOUD_PROJECT": "p2"})
    assert on_global.startswith("https://aiplatform.googleapis.com/v1/projects/p2/locations/global/")
    assert on_global.endswith("?alt=sse")
    with pytest.raises(ConfigError, match="GOOGLE_CLOUD_PROJECT"):
        vertex_url(default, path, {}, lambda: None, "vertex", environ={})


def test_model_not_enabled_throttling_and_refused_credentials_are_named(vertex: CloudServer, tmp_path: Path) -> None:
    quota = {"error": {"code": 429, "message": "Quota exceeded for aiplatform.googleapis.com/generate_content_requests",
                       "status": "RESOURCE_EXHAUSTED",
                       "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}]}}
    refused = {"error": {"code": 401, "status": "UNAUTHENTICATED",
                         "message": "Request had invalid authentication credentials. Got Bearer {token}"}}
    vertex.script(GEMINI + ":generateContent",
                  Reply(404, (CLOUD / "error__404_publisher_model_not_found.json").read_bytes()),
                  Reply(429, json.dumps(quota).encode()))
    with client(tmp_path) as models:
        with pytest.raises(ModelNotEnabledError, match="Model Garden"):
            models.complete(ask(), "vertex:gemini-2.5-flash")
        with pytest.raises(RateLimitError) as throttled:
            models.complete(ask(), "vertex:gemini-2.5-flash")
        assert throttled.value.retry_after == 12.0
        token = vertex.tokens_issued[-1]
        refused["error"]["message"] = refused["error"]["message"].replace("{token}", token)
        vertex.script(CLAUDE + ":rawPredict", Reply(401, json.dumps(refused).encode()))
        with pytest.raises(CloudCredentialsError, match="gcloud auth application-default login") as denied:
            models.complete(ask(), "vertex_anthropic:claude-sonnet-4-5@20250929")
    assert token not in str(denied.value) and "[redacted key]" in str(denied.value)


def test_missing_credentials_and_missing_extra_say_what_to_do(vertex: CloudServer, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    with client(tmp_path) as models, pytest.raises(CloudCredentialsError, match="application-default login"):
        models.complete(ask(), "vertex:gemini-2.5-flash")
    monkeypatch.setitem(sys.modules, "google.auth", None)
    with client(tmp_path) as models, pytest.raises(CloudExtraMissingError, match=r"metis-core\[vertex\]"):
        models.complete(ask(), "vertex:gemini-2.5-flash")
    assert not vertex.calls()


def test_an_expired_token_is_refreshed_and_never_logged(vertex: CloudServer, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    body = (CLOUD / "gemini__global_generate_content.json").read_bytes()
    vertex.script(GEMINI + ":generateContent", Reply(200, body), Reply(200, body))
    caplog.set_level(logging.DEBUG)
    with client(tmp_path) as models:
        models.complete(ask(), "vertex:gemini-2.5-flash")
        credentials = models.adapter("vertex").tokens._credentials  # type: ignore[attr-defined]
        credentials.expiry = credentials.expiry.replace(year=2000)  # as if an hour had passed
        models.complete(ask(), "vertex:gemini-2.5-flash")
    first, second = vertex.tokens_issued[-2:]
    assert first != second
    assert [c.headers["authorization"] for c in vertex.calls()] == [f"Bearer {first}", f"Bearer {second}"]
    assert first not in caplog.text and second not in caplog.text


def test_a_cut_off_claude_stream_on_vertex_ends_as_a_named_network_failure(vertex: CloudServer,
                                                                          tmp_path: Path) -> None:
    whole = read_bytes("anthropic", "stream__cache_read_usage.sse")
    vertex.script(CLAUDE + ":streamRawPredict", Reply(200, whole[: whole.index(b"event: message_delta")],
                                                      "text/event-stream"))
    with client(tmp_path) as models:
        events = list(models.stream(ask(), "vertex_anthropic:claude-sonnet-4-5@20250929"))
    failure = [e for e in events if e.type == "error"]
    assert failure and failure[0].error_class == "network" and failure[0].retryable  # type: ignore[attr-defined]
    assert events[-1].message.metadata.status.value in ("partial", "error")  # type: ignore[union-attr]
