"""ModelClient -> a real HTTP server on 127.0.0.1 replaying recorded Bedrock traffic: the real signing,
the percent-encoded model path, the binary event stream in network-sized pieces, and AWS's errors
as named errors that never show a credential (in messages, stream events or logs)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import botocore.auth
import pytest
from bedrock_recordings import body, index, model_of
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from cli.replay_server import ReplayServer, Reply, SeenRequest

from metis_core.adapters.bedrock.errors import (
    BedrockCredentialsError,
    BedrockModelAccessError,
    BedrockModelError,
    BedrockThrottlingError,
    BedrockValidationError,
)
from metis_core.adapters.client import ModelClient
from metis_core.config import load_config
from metis_core.errors import ProviderError
from metis_core.messages import MessageComplete, StreamError, user_message
from metis_core.transport.retry import RetryPolicy

KEY_ID, SECRET = "AKIAZ7TESTKEY0SECRET", "s3cr3t/AWS+secret+access+key+0123456789"
TOKEN = "IQoJb3JpZ2luX2VjEXAMPLEtoken0123"
EVENTSTREAM = "application/vnd.amazon.eventstream"


def path_of(name: str) -> str:
    return "/model/" + index()[name]["request_uri"].split("/model/", 1)[1]


@pytest.fixture(scope="module")
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer().start()
    yield replay
    replay.stop()


@pytest.fixture
def upstream(server: ReplayServer) -> ReplayServer:
    server.requests.clear()
    server.queues.clear()
    return server


@pytest.fixture
def aws_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": TOKEN,
                        "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "METIS_HOME": str(tmp_path),
                        "AWS_CONFIG_FILE": str(tmp_path / "none"),
                        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def client(upstream: ReplayServer, aws_env: None) -> Iterator[ModelClient]:
    with ModelClient(base_urls={"bedrock": upstream.base_url}, retry=RetryPolicy(max_retries=0),
                     config=load_config()) as model_client:
        yield model_client


def assert_signed_by_test_credentials(seen: SeenRequest, base_url: str) -> None:
    """Recompute the signature over what the server received, with botocore, from the test credentials."""
    authorization = seen.headers["authorization"]
    signed_names = authorization.split("SignedHeaders=", 1)[1].split(",", 1)[0].split(";")
    request = AWSRequest(method=seen.method, url=base_url + seen.path, data=seen.raw,
                         headers={n: seen.headers[n] for n in signed_names if n != "host"})
    request.context["timestamp"] = seen.headers["x-amz-date"]
    signer = botocore.auth.SigV4Auth(Credentials(KEY_ID, SECRET, TOKEN), "bedrock", "us-east-1")
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    assert authorization.endswith(f"Signature={expected}")
    assert f"Credential={KEY_ID}/" in authorization and seen.headers["x-amz-security-token"] == TOKEN


def test_a_signed_converse_call_to_an_arn_model_parses_the_recorded_answer(client: ModelClient,
                                                                           upstream: ReplayServer) -> None:
    name = "converse_application_profile_arn"
    upstream.script(path_of(name), Reply(200, body(name), "application/json"))
    message = client.complete([user_message('Say "hello" and nothing else.')], model_of(name))
    assert message.text() == "Hello"
    [seen] = upstream.requests
    assert seen.path.startswith("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference")
    assert_signed_by_test_credentials(seen, upstream.base_url)


def test_a_signed_converse_stream_is_unframed_from_network_pieces(client: ModelClient,
                                                                   upstream: ReplayServer) -> None:
    name = "stream_reasoning_signed"
    upstream.script(path_of(name), Reply(200, body(name), EVENTSTREAM))
    events = list(client.stream([user_message("Hello")], model_of(name)))
    complete = events[-1]
    assert isinstance(complete, MessageComplete)
    assert complete.message.text() == "Hello! It's nice to meet you. How can I help you today?"
    assert complete.message.metadata.usage.cost_usd is not None
    assert_signed_by_test_credentials(upstream.requests[0], upstream.base_url)


async def test_the_async_stream_reads_the_same_event_stream(client: ModelClient, upstream: ReplayServer) -> None:
    name = "stream_tool_use_nova"
    upstream.script(path_of(name), Reply(200, body(name), EVENTSTREAM))
    events = [event async for event in client.astream([user_message("temperature?")], model_of(name))]
    message = events[-1].message  # type: ignore[attr-defined]
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert upstream.requests[0].path == path_of(name)  # aiohttp sends the %3A as built: what was signed
    assert_signed_by_test_credentials(upstream.requests[0], upstream.base_url)


def test_a_body_cut_inside_an_event_stream_message_keeps_the_partial_answer(client: ModelClient,
                                                                             upstream: ReplayServer) -> None:
    name = "stream_text_nova"
    upstream.script(path_of(name), Reply(200, body(name)[:2000], EVENTSTREAM))
    events = list(client.stream([user_message("capital of France?")], model_of(name)))
    [error] = [e for e in events if isinstance(e, StreamError)]
    assert error.error_class == "network" and "cut off" in error.message
    assert events[-1].message.metadata.status.value == "partial"  # type: ignore[attr-defined]
    assert events[-1].message.text().startswith("The capital of France is Paris.")  # type: ignore[attr-defined]


def test_a_bearer_api_key_replaces_signing(upstream: ReplayServer, aws_env: None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSKQmVkcm9ja0FQSUtleS10ZXN0LWtleS0wMTIzNDU2Nzg5")
    name = "converse_text_nova"
    upstream.script(path_of(name), Reply(200, body(name), "application/json"))
    with ModelClient(base_urls={"bedrock": upstream.base_url}, config=load_config()) as client:
        client.complete([user_message("hello")], model_of(name))
    seen = upstream.requests[0].headers
    assert seen["authorization"] == "Bearer ABSKQmVkcm9ja0FQSUtleS10ZXN0LWtleS0wMTIzNDU2Nzg5"
    assert "x-amz-date" not in seen


@pytest.mark.parametrize(("status", "error_type", "expected", "hint"), [
    (429, "ThrottlingException", BedrockThrottlingError, "wait and retry"),
    (429, "ModelNotReadyException", BedrockThrottlingError, "wait and retry"),
    (503, "ServiceUnavailableException", BedrockModelError, "retry shortly"),
    (403, "AccessDeniedException", BedrockModelAccessError, "enable access to this model"),
    (403, "ExpiredTokenException", BedrockCredentialsError, "aws sso login"),
    (400, None, BedrockValidationError, "check the model id"),
])
def test_aws_errors_are_named_say_what_to_do_and_never_show_a_credential(
        client: ModelClient, upstream: ReplayServer, caplog: pytest.LogCaptureFixture, status: int,
        error_type: str | None, expected: type[ProviderError], hint: str) -> None:
    echo = f'{{"message":"request signed by {KEY_ID} with {SECRET} and token {TOKEN} was refused"}}'.encode()
    headers = {"x-amzn-ErrorType": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/",
               "Retry-After": "7"} if error_type else {}
    name = "error_invalid_model_id"
    reply = Reply(status, body(name) if error_type is None else echo, "application/json", headers=headers)
    upstream.script(path_of("converse_text_nova"), reply)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(expected) as caught:
        client.complete([user_message("hello")], model_of("converse_text_nova"))
    rendered = " ".join([str(caught.value), repr(caught.value), caught.value.detail, caplog.text])
    assert hint in str(caught.value)
    assert not any(secret in rendered for secret in (KEY_ID, SECRET, TOKEN))
    if error_type == "ThrottlingException":
        assert caught.value.retryable and caught.value.retry_after == 7


def test_an_exception_inside_the_stream_is_an_error_event_without_credentials(client: ModelClient,
                                                                             upstream: ReplayServer) -> None:
    from stream_frames import event_message, exception_message

    frames = (event_message("messageStart", b'{"role":"assistant"}')
              + event_message("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"Par"}}')
              + exception_message("throttlingException", f'{{"message":"slow down {KEY_ID}"}}'.encode()))
    upstream.script(path_of("stream_text_nova"), Reply(200, frames, EVENTSTREAM))
    events = list(client.stream([user_message("capital?")], model_of("stream_text_nova")))
    [error] = [e for e in events if isinstance(e, StreamError)]
    assert error.error_class == "rate_limit" and error.retryable and KEY_ID not in error.message
    assert events[-1].message.text() == "Par"  # type: ignore[attr-defined]


def test_a_converse_stream_refused_before_any_event_raises_the_recorded_validation_error(
        client: ModelClient, upstream: ReplayServer) -> None:
    """Bedrock's recorded 400 to a ConverseStream call for a model id it does not know: a JSON body,
    not an event stream, and no x-amzn-ErrorType header in the recording; the status names the class."""
    name = "error_invalid_model_id_stream"
    upstream.script(path_of(name), Reply(400, body(name), "application/json"))
    with pytest.raises(BedrockValidationError) as caught:
        list(client.stream([user_message("hello")], model_of(name)))
    assert "HTTP 400: The provided model identifier is invalid. (check the model id" in str(caught.value)
    assert caught.value.status == 400 and not caught.value.retryable
    assert upstream.requests[0].path.endswith("/converse-stream")
