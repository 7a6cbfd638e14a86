"""Every cloud upstream behind one gateway, for both official SDKs, streamed and not.

One module-scoped gateway fronts Claude and Nova on Bedrock (botocore's SigV4 with a session
token), Azure OpenAI deployments (Chat Completions and Responses) on the api-version endpoint with
a Microsoft Entra ID token that azure-identity's managed identity credential fetches, and Gemini
and Claude on Vertex AI in a region (google-auth signing a service-account JWT). All upstream
answers are recordings served by tests/cloud_server.py; each call is charged to its key at its
Decimal price and recorded with its provider, a budget too small for a call is refused before any
upstream traffic, and `metis cost --by provider` splits the spend by platform.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import anthropic
import botocore.auth
import openai
import pytest
from bedrock_recordings import body as bedrock_body
from bedrock_recordings import index as bedrock_index
from bedrock_recordings import model_of
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from cli.replay_server import ReplayServer
from cloud_server import (
    IDENTITY_HEADER,
    IDENTITY_PATH,
    CloudServer,
    Reply,
    Seen,
    only_these_cloud_credentials,
    serving_cloud,
)
from fixture_files import read_bytes
from typer.testing import CliRunner

from metis_core.adapters.client import ModelClient
from metis_core.cli.app import app
from metis_core.transport.retry import RetryPolicy

from .gateway_harness import GatewayHarness

KEY_ID, SECRET = "AKIAZ7MATRIXTEST0000", "matrix/test+secret+access+key+0123456789"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjMATRIXsessionTOKEN0123456789"
AZURE_KEY = "azure-matrix-SECRET-4b3a29180f7e6d5c"
REGION = "us-east5"
VERTEX = f"/v1/projects/metis-test-project/locations/{REGION}/publishers"
AZURE_VERSION = "2024-10-21"
AZURE = "/openai/deployments/gpt-4o/chat/completions?api-version=" + AZURE_VERSION
CLOUD = Path(__file__).parents[1] / "data" / "cloud"
M = Decimal(1_000_000)


def priced(tokens_in: int, tokens_out: int, rate_in: str, rate_out: str) -> Decimal:
    """A call's list price: tokens times USD per million tokens."""
    return (tokens_in * Decimal(rate_in) + tokens_out * Decimal(rate_out)) / M


@dataclass(frozen=True)
class Upstream:
    provider: str
    model: str
    path: str
    answer: Reply
    answer_text: str
    answer_cost: Decimal
    stream_path: str
    stream: Reply
    stream_text: str
    stream_cost: Decimal


SSE, EVENTSTREAM = "text/event-stream", "application/vnd.amazon.eventstream"
UPSTREAMS = {u.provider: u for u in [
    Upstream("bedrock", "bedrock:us.amazon.nova-micro-v1:0",
             "/model/us.amazon.nova-micro-v1%3A0/converse", Reply(200, bedrock_body("converse_text_nova")),
             "Hello! How can I assist you today?", priced(7, 30, "0.035", "0.14"),  # Nova Micro list price
             "/model/us.amazon.nova-micro-v1%3A0/converse-stream",
             Reply(200, bedrock_body("stream_text_nova"), EVENTSTREAM),
             "The capital of France is Paris.", priced(13, 82, "0.035", "0.14")),
    Upstream("azure", "azure:gpt-4o",
             AZURE, Reply(200, (CLOUD / "azure" / "chat__annotations_with_filter_results.json").read_bytes()),
             "Example model response will be returned", priced(11, 40, "2.50", "10"),  # gpt-4o list price
             AZURE, Reply(200, (CLOUD / "azure" / "chat_stream__gpt-5.4-mini_with_filter_results.sse").read_bytes(),
                          SSE),
             "Hi! How can I help?", priced(23, 11, "2.50", "10")),
    Upstream("azure_responses", "azure_responses:gpt-5",  # the Responses API on the same resource
             f"/openai/responses?api-version={AZURE_VERSION}",
             Reply(200, read_bytes("openai_responses", "response__reasoning_encrypted_content_summary.json")),
             "```python\ndef factorial", priced(34, 226, "1.25", "10"),  # gpt-5 list price
             f"/openai/responses?api-version={AZURE_VERSION}",
             Reply(200, read_bytes("openai_responses", "stream__text.sse"), SSE),
             "Hello! 🌍 How can", priced(9, 12, "1.25", "10")),
    Upstream("vertex", "vertex:gemini-2.5-flash",
             f"{VERTEX}/google/models/gemini-2.5-flash:generateContent",
             Reply(200, (CLOUD / "vertex" / "gemini__global_generate_content.json").read_bytes()),
             "안녕하세요", priced(13, 40, "0.30", "2.50"),  # gemini-2.5-flash list price
             f"{VERTEX}/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
             Reply(200, read_bytes("gemini", "stream__text.sse"), SSE),
             "The capital of France is Paris.", priced(13, 8, "0.30", "2.50")),
    Upstream("vertex_anthropic", "vertex_anthropic:claude-haiku-4-5@20251001",
             f"{VERTEX}/anthropic/models/claude-haiku-4-5@20251001:rawPredict",
             Reply(200, read_bytes("anthropic", "response__text.json")),
             "The weather in SF", priced(705, 25, "1", "5"),  # claude-haiku-4-5 list price
             f"{VERTEX}/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict",
             Reply(200, read_bytes("anthropic", "stream__text_basic.sse"), SSE),
             "Hello there!", priced(11, 6, "1", "5")),
]}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    home = tmp_path_factory.mktemp("cloud-matrix")
    cloud, key_file = serving_cloud(home)
    replay = ReplayServer().start()  # the harness's direct upstream: no call goes there
    with pytest.MonkeyPatch.context() as env:
        only_these_cloud_credentials(env, home, KEY_ID, SECRET, key_file)
        env.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
        env.setenv("GOOGLE_CLOUD_LOCATION", REGION)
        env.setenv("AZURE_OPENAI_API_VERSION", AZURE_VERSION)
        env.setenv("IDENTITY_ENDPOINT", cloud.base_url + IDENTITY_PATH)  # App Service managed identity
        env.setenv("IDENTITY_HEADER", IDENTITY_HEADER)
        for name in ("AZURE_OPENAI_API_KEY", "OPENAI_API_VERSION", "AZURE_CLIENT_ID", "AZURE_TENANT_ID",
                     "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "MSI_ENDPOINT", "MSI_SECRET"):
            env.delenv(name, raising=False)
        keyed = f"azure+http://{AZURE_KEY}@{cloud.base_url.removeprefix('http://')}/openai/v1"  # v1, api-key
        env.setenv("METIS_PROVIDER_AZKEY", keyed)  # a second Azure resource, as a named provider
        harness = GatewayHarness(home / "home", replay)
        harness.runtime.client = ModelClient(base_urls={provider: cloud.base_url for provider in UPSTREAMS},
                                             api_keys={}, retry=RetryPolicy(max_retries=0))
        harness.runtime.configured_providers = {*UPSTREAMS, "azkey"}
        harness.cloud = cloud  # type: ignore[attr-defined]
        harness.start()
        yield harness
        harness.stop()
    replay.stop()
    cloud.stop()


@pytest.fixture
def cloud(gateway: GatewayHarness) -> CloudServer:
    server: CloudServer = gateway.cloud  # type: ignore[attr-defined]
    server.queues.clear()
    server.seen.clear()
    return server


@cache
def openai_client(base_url: str, token: str) -> openai.OpenAI:  # building one loads TLS roots: once per key
    return openai.OpenAI(base_url=base_url + "/v1", api_key=token, max_retries=0)


@cache
def anthropic_client(base_url: str, token: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url, api_key=token, max_retries=0)


def ask(gateway: GatewayHarness, sdk: str, token: str, model: str, stream: bool, **extra: Any) -> str:
    """One call through the gateway with an official SDK; the answer's text."""
    messages: Any = [{"role": "user", "content": "hi"}]
    if sdk == "openai":
        client = openai_client(gateway.base_url, token)
        if not stream:
            answer = client.chat.completions.create(model=model, messages=messages, **extra)
            return answer.choices[0].message.content or ""
        chunks = client.chat.completions.create(model=model, messages=messages, stream=True, **extra)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    claude = anthropic_client(gateway.base_url, token)
    max_tokens = extra.pop("max_tokens", 500)
    if not stream:
        reply = claude.messages.create(model=model, max_tokens=max_tokens, messages=messages, **extra)
        return "".join(b.text for b in reply.content if b.type == "text")
    with claude.messages.stream(model=model, max_tokens=max_tokens, messages=messages, **extra) as streamed:
        final = streamed.get_final_message()
    return "".join(b.text for b in final.content if b.type == "text")


def assert_signed_with_the_session_credentials(seen: Seen, base_url: str) -> None:
    """botocore recomputes the SigV4 signature over what the upstream received."""
    authorization = seen.headers["authorization"]
    names = authorization.split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
    request = AWSRequest(method="POST", url=base_url + seen.path, data=seen.body,
                         headers={n: seen.headers[n] for n in names if n != "host"})
    request.context["timestamp"] = seen.headers["x-amz-date"]
    signer = botocore.auth.SigV4Auth(Credentials(KEY_ID, SECRET, SESSION_TOKEN), "bedrock", "us-east-1")
    assert authorization.endswith("Signature=" + signer.signature(
        signer.string_to_sign(request, signer.canonical_request(request)), request))
    assert seen.headers["x-amz-security-token"] == SESSION_TOKEN


def assert_authenticated(upstream: Upstream, seen: Seen, cloud: CloudServer) -> None:
    if upstream.provider == "bedrock":
        assert_signed_with_the_session_credentials(seen, cloud.base_url)
        return
    bearer = seen.headers["authorization"].removeprefix("Bearer ")
    assert bearer in cloud.tokens_issued and "api-key" not in seen.headers
    if upstream.provider.startswith("azure"):  # a managed identity token azure-identity fetched
        assert bearer.startswith("eyJ0eXAiOiJKV1Qi.managed-identity-")
    else:  # a Google access token google-auth got for the signed service-account JWT
        assert bearer.startswith("ya29.test-token-")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
@pytest.mark.parametrize("provider", list(UPSTREAMS))
def test_each_sdk_is_answered_by_each_cloud_charged_and_recorded_with_its_provider(
        gateway: GatewayHarness, cloud: CloudServer, provider: str, sdk: str, stream: bool) -> None:
    upstream = UPSTREAMS[provider]
    path, reply = (upstream.stream_path, upstream.stream) if stream else (upstream.path, upstream.answer)
    cloud.script(path, reply)
    key_id, token = gateway.issue(budget_usd=Decimal("5"), budget_period="day", allowed_models=[upstream.model])
    text = ask(gateway, sdk, token, upstream.model, stream)
    assert text.startswith(upstream.stream_text if stream else upstream.answer_text)
    [seen] = cloud.calls()
    assert seen.path == path and token not in json.dumps(seen.headers)
    assert_authenticated(upstream, seen, cloud)
    expected = upstream.stream_cost if stream else upstream.answer_cost
    [completed] = gateway.recorded("llm.call_completed", lambda e: e.payload["gateway_key_id"] == key_id)
    assert completed.payload["provider"] == provider and completed.payload["model"] == upstream.model
    assert Decimal(str(completed.payload["cost_usd"])) == expected
    assert gateway.spent_today(key_id) == expected


@pytest.mark.parametrize(("provider", "sdk"), [("bedrock", "openai"), ("azure", "anthropic"),
                                               ("vertex", "openai"), ("vertex_anthropic", "anthropic")])
def test_a_budget_too_small_for_the_call_is_refused_before_the_cloud_is_asked(
        gateway: GatewayHarness, cloud: CloudServer, provider: str, sdk: str) -> None:
    upstream = UPSTREAMS[provider]
    cloud.script(upstream.path, upstream.answer)
    key_id, token = gateway.issue(budget_usd=Decimal("0.000001"), budget_period="day")
    refused = openai.RateLimitError if sdk == "openai" else anthropic.RateLimitError
    with pytest.raises(refused) as caught:
        ask(gateway, sdk, token, upstream.model, False, max_tokens=1000)
    assert caught.value.status_code == 429 and "budget" in str(caught.value).lower()
    assert not cloud.calls() and cloud.queues[upstream.path], "no upstream traffic"
    assert gateway.spent_today(key_id) == 0


def test_allow_lists_name_cloud_models_and_an_inference_profile_arn_is_a_model_id(
        gateway: GatewayHarness, cloud: CloudServer) -> None:
    bedrock, vertex = UPSTREAMS["bedrock"], UPSTREAMS["vertex_anthropic"]
    arn = model_of("converse_application_profile_arn")  # bedrock:arn:aws:bedrock:...:application-inference-profile/...
    arn_path = "/model/" + bedrock_index()["converse_application_profile_arn"]["request_uri"].split("/model/", 1)[1]
    cloud.script(bedrock.path, bedrock.answer)
    cloud.script(arn_path, Reply(200, bedrock_body("converse_application_profile_arn")))
    key_id, token = gateway.issue(allowed_models=["bedrock:us.amazon.*", arn, "azure:gpt-4o"])
    assert ask(gateway, "openai", token, bedrock.model, False).startswith(bedrock.answer_text)
    assert ask(gateway, "anthropic", token, arn, False) == "Hello"
    assert [c.path for c in cloud.calls()] == [bedrock.path, arn_path]
    [_, by_arn] = [e for e in gateway.of_type("llm.call_completed") if e.payload["gateway_key_id"] == key_id]
    assert by_arn.payload["model"] == arn and by_arn.payload["provider"] == "bedrock"
    for model in (vertex.model, "azure:gpt-4o-mini", "bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0",
                  arn.replace("mi1dadi0g15f", "other0profile")):
        with pytest.raises(openai.PermissionDeniedError):
            ask(gateway, "openai", token, model, False)
    assert len(cloud.calls()) == 2


def test_cost_by_provider_splits_the_cloud_spend(gateway: GatewayHarness, cloud: CloudServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _, token = gateway.issue()
    for upstream in UPSTREAMS.values():
        cloud.script(upstream.path, upstream.answer)
        ask(gateway, "anthropic", token, upstream.model, False)
    gateway.drain()
    spent: dict[str, Decimal] = {}
    for event in gateway.events.of_type("llm.call_completed"):  # every call this gateway made so far
        provider = event.payload["provider"]
        spent[provider] = spent.get(provider, Decimal(0)) + Decimal(str(event.payload["cost_usd"]))
    monkeypatch.setenv("METIS_HOME", str(gateway.runtime.home))
    result = CliRunner().invoke(app, ["cost", "--by", "provider", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["key"]: Decimal(row["cost_usd"]) for row in json.loads(result.output)["provider"]}
    assert set(rows) == set(UPSTREAMS)
    assert rows == pytest.approx(spent, abs=Decimal("1e-9"))


def test_no_cloud_credential_reaches_a_client_event_log_store_or_export(
        gateway: GatewayHarness, cloud: CloudServer, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers and failures whose bodies echo every credential in use: AWS's secret key and session
    token, the Azure api-key, the Entra and Google access tokens. None reaches the SDK client, an
    event, a log record, the stored record or an export of it."""
    from stream_frames import event_message, exception_message

    caplog.set_level(logging.DEBUG)
    _, token = gateway.issue()
    for provider in ("azure", "vertex", "vertex_anthropic"):  # each platform's token issued and in use
        cloud.script(UPSTREAMS[provider].path, UPSTREAMS[provider].answer)
        ask(gateway, "openai", token, UPSTREAMS[provider].model, False)
    cloud.script("/openai/v1/chat/completions", UPSTREAMS["azure"].answer)
    ask(gateway, "anthropic", token, "azkey:gpt-4o", True)
    secrets = [SECRET, SESSION_TOKEN, AZURE_KEY, *cloud.tokens_issued]
    echo = json.dumps({"message": "refused: " + " ".join(secrets),
                       "error": {"code": "401", "message": "bad credentials " + " ".join(secrets)}}).encode()
    expired = {"x-amzn-ErrorType": "ExpiredTokenException:http://internal.amazon.com/coral/"}
    stream_cut = (event_message("messageStart", b'{"role":"assistant"}')
                  + exception_message("throttlingException", json.dumps({"message": " ".join(secrets)}).encode()))
    failures: list[tuple[str, str, bool, Reply]] = [
        ("bedrock", UPSTREAMS["bedrock"].path, False, Reply(403, echo, headers=expired)),
        ("bedrock", UPSTREAMS["bedrock"].stream_path, True, Reply(200, stream_cut, EVENTSTREAM)),
        ("azure", UPSTREAMS["azure"].path, False, Reply(401, echo)),
        ("azkey", "/openai/v1/chat/completions", True, Reply(401, echo)),
        ("vertex", UPSTREAMS["vertex"].path, False, Reply(401, echo)),
        ("vertex_anthropic", UPSTREAMS["vertex_anthropic"].stream_path, True, Reply(429, echo)),
    ]
    told: list[str] = []
    for provider, path, stream, reply in failures:
        cloud.script(path, reply)
        model = "azkey:gpt-4o" if provider == "azkey" else UPSTREAMS[provider].model
        for sdk in ("openai", "anthropic"):
            cloud.script(path, reply)
            try:
                told.append(ask(gateway, sdk, token, model, stream))
            except (openai.APIError, anthropic.APIError) as failed:
                told += [str(failed), repr(failed), json.dumps(failed.body, default=str)]
    assert len(cloud.calls()) == 4 + 2 * len(failures)
    gateway.drain()
    events = gateway.events.events
    failed_sessions = list(dict.fromkeys(e.session_id for e in events if e.type == "llm.call_failed"))
    assert len(failed_sessions) >= len(failures)
    monkeypatch.setenv("METIS_HOME", str(gateway.runtime.home))
    exported = [CliRunner().invoke(app, ["trace", "export", session, "--format", fmt, "--include-content"]).output
                for session in failed_sessions[:1] for fmt in ("eventlog", "otel")]
    stored = b"".join(p.read_bytes() for p in Path(gateway.runtime.home).glob("metis.db*"))
    seen_anywhere = "\n".join([*told, json.dumps([e.model_dump(mode="json") for e in events]), caplog.text,
                               *exported, stored.decode("utf-8", "replace")])
    assert sum("refused the gateway's own credentials" in said for said in told) >= 4 * 2  # 4 refusals, 2 SDKs
    leaked = [secret[:12] for secret in secrets if secret in seen_anywhere]
    assert not leaked, f"credentials leaked: {leaked}"
    assert all("[redacted key]" in out for out in exported), "each export carries its failure, scrubbed"


def test_a_bedrock_guardrail_block_reaches_each_sdk_as_a_refusal(gateway: GatewayHarness, cloud: CloudServer) -> None:
    """Bedrock answers a blocked prompt with 200 and the guardrail's message: a refusal on the record
    (stop reason `refusal`), content_filter to an OpenAI client, refusal to an Anthropic one."""
    blocked = json.dumps({
        "output": {"message": {"role": "assistant", "content": [{"text": "Sorry, I can't help with that."}]}},
        "stopReason": "guardrail_intervened", "usage": {"inputTokens": 12, "outputTokens": 0, "totalTokens": 12},
        "trace": {"guardrail": {"inputAssessment": {"g1": {"topicPolicy": {"topics": [
            {"name": "Finance", "type": "DENY", "action": "BLOCKED"}]}}}}}}).encode()
    bedrock = UPSTREAMS["bedrock"]
    cloud.script(bedrock.path, Reply(200, blocked), Reply(200, blocked))
    key_id, token = gateway.issue()
    answer = openai_client(gateway.base_url, token).chat.completions.create(
        model=bedrock.model, messages=[{"role": "user", "content": "stock tips?"}])
    reply = anthropic_client(gateway.base_url, token).messages.create(
        model=bedrock.model, max_tokens=100, messages=[{"role": "user", "content": "stock tips?"}])
    assert answer.choices[0].finish_reason == "content_filter"
    assert answer.choices[0].message.content == "Sorry, I can't help with that."  # the guardrail's own message
    assert reply.stop_reason == "refusal" and reply.content[0].text == "Sorry, I can't help with that."  # type: ignore[union-attr]
    recorded = [e for e in gateway.of_type("llm.call_completed") if e.payload["gateway_key_id"] == key_id]
    assert [e.payload["stop_reason"] for e in recorded] == ["refusal", "refusal"]



def test_a_bedrock_event_stream_cut_mid_message_is_a_named_stream_error_for_each_sdk(
        gateway: GatewayHarness, cloud: CloudServer) -> None:
    bedrock = UPSTREAMS["bedrock"]
    cut = Reply(200, bedrock_body("stream_text_nova")[:2000], EVENTSTREAM)  # ends inside an event-stream frame
    cloud.script(bedrock.stream_path, cut, cut)
    _, token = gateway.issue()
    with pytest.raises(openai.APIError, match=r"body cut off\); the partial answer is kept, retry the turn"):
        list(openai_client(gateway.base_url, token).chat.completions.create(
            model=bedrock.model, messages=[{"role": "user", "content": "capital of France?"}], stream=True))
    claude = anthropic_client(gateway.base_url, token)
    with (pytest.raises(anthropic.APIStatusError, match=r"body cut off\); the partial answer is kept, retry"),
          claude.messages.stream(model=bedrock.model, max_tokens=100,
                                 messages=[{"role": "user", "content": "capital?"}]) as streamed):
        streamed.get_final_message()
    assert len(cloud.calls()) == 2
