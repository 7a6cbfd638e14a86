"""Every recorded OpenAI chat error body -> the right ProviderError, through ModelClient.

Checks class, status, provider code, request id (x-request-id), retry_after (header or the
"try again in 20s" hint in the body) and that an echoed key fragment never reaches the message.
"""

from __future__ import annotations

import pytest
from fixture_files import read_bytes, wire_files
from openai_chat_testkit import chat_client, json_response

from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from metis_core.messages import user_message
from metis_core.transport.wire import WireResponse

# name -> (status, class, provider_code, retry_after)
EXPECTED: dict[str, tuple[int, type[ProviderError], str, float | None]] = {
    "error__400_invalid_value_content_blocks.json": (400, InvalidRequestError, "invalid_value", None),
    "error__400_unsupported_value_developer_role.json": (400, InvalidRequestError, "unsupported_value", None),
    "error__401_invalid_api_key.json": (401, AuthenticationError, "invalid_api_key", None),
    "error__404_model_not_found.json": (404, InvalidRequestError, "model_not_found", None),
    "error__429_rate_limit_exceeded.json": (429, RateLimitError, "rate_limit_exceeded", 20.0),
}


def test_every_error_sample_has_expectations() -> None:
    assert sorted(p.name for p in wire_files("openai_chat", "error")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_error_maps_to_its_class(name: str) -> None:
    status, cls, code, retry_after = EXPECTED[name]
    body = read_bytes("openai_chat", name)
    client, _ = chat_client("openai", json_response(body, status, {"x-request-id": "req_abc"}))
    with pytest.raises(ProviderError) as caught:
        client.complete([user_message("hi")], "openai:gpt-4o")
    error = caught.value
    assert type(error) is cls
    assert (error.status, error.provider_code, error.request_id) == (status, code, "req_abc")
    assert error.retry_after == retry_after
    assert error.provider == "openai"


def test_echoed_key_fragment_is_redacted() -> None:
    error = OpenAIChatAdapter().classify_error(
        WireResponse(401, read_bytes("openai_chat", "error__401_invalid_api_key.json"))
    )
    assert "bad-key" not in str(error) and "[redacted]" in str(error)


def classify(status: int, body: bytes, headers: dict[str, str] | None = None) -> ProviderError:
    return OpenAIChatAdapter().classify_error(WireResponse(status, body, headers or {}))


def test_context_length_exceeded_is_context_overflow() -> None:
    body = b"""{
  "error": {
    "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded"
  }
}"""
    error = classify(400, body)
    assert isinstance(error, ContextOverflowError) and not error.retryable


def test_insufficient_quota_is_not_retryable_even_though_it_is_a_429() -> None:
    body = b'{"error": {"message": "Out of quota.", "type": "insufficient_quota", "code": "insufficient_quota"}}'
    error = classify(429, body)
    assert isinstance(error, AuthenticationError) and not error.retryable
    assert error.provider_code == "insufficient_quota" and "billing" in str(error)


def test_server_errors_are_retryable_and_honour_retry_after_headers() -> None:
    error = classify(
        503, b'{"error": {"message": "The server is overloaded", "type": "server_error"}}', {"retry-after": "7"}
    )
    assert isinstance(error, ServerError) and error.retryable and error.retry_after == 7.0
    assert isinstance(classify(500, b"upstream connect error"), ServerError)
    assert classify(429, b'{"error": {"message": "slow down"}}', {"retry-after-ms": "1500"}).retry_after == 1.5


def test_non_json_and_empty_error_bodies_still_classify() -> None:
    assert isinstance(classify(502, b"<html>Bad Gateway</html>"), ServerError)
    empty = classify(401, b"")
    assert isinstance(empty, AuthenticationError) and "HTTP 401" in str(empty)
    assert isinstance(classify(422, b'{"detail": "field required"}'), InvalidRequestError)
