"""Ollama error responses -> the right ProviderError class, with status, request id and retry_after."""

from __future__ import annotations

import pytest
from fixture_files import read_bytes, wire_files

from metis_core.adapters.ollama.adapter import OllamaAdapter
from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from metis_core.transport.wire import WireResponse

DOCS_ERROR = "the model failed to generate a response"


def classify(status: int, body: bytes, headers: dict[str, str] | None = None) -> ProviderError:
    return OllamaAdapter().classify_error(WireResponse(status, body, headers or {}))


def test_the_error_sample_is_the_only_one() -> None:
    assert [p.name for p in wire_files("ollama", "error")] == ["error__body.json"]


@pytest.mark.parametrize(
    ("status", "cls", "retryable"),
    [(500, ServerError, True), (503, ServerError, True), (400, InvalidRequestError, False)],
)
def test_docs_error_body_maps_by_status(status: int, cls: type[ProviderError], retryable: bool) -> None:
    error = classify(status, read_bytes("ollama", "error__body.json"))
    assert type(error) is cls and error.retryable is retryable
    assert error.provider == "ollama" and error.status == status and error.detail == DOCS_ERROR


def test_missing_model_is_not_retryable_and_says_how_to_pull_it() -> None:
    error = classify(404, b'{"error":"model \\"qwen3:8b\\" not found, try pulling it first"}')
    assert isinstance(error, InvalidRequestError) and not error.retryable
    assert error.provider_code == "model_not_found"
    assert "ollama pull qwen3:8b" in str(error)


def test_a_404_without_a_model_message_points_at_the_base_url() -> None:
    error = classify(404, b"404 page not found")
    assert isinstance(error, InvalidRequestError) and "base URL" in str(error)


def test_context_overflow_is_detected_from_the_text() -> None:
    error = classify(400, b'{"error":"the input length exceeds the context length"}')
    assert isinstance(error, ContextOverflowError) and "num_ctx" in str(error)


def test_hosted_ollama_auth_failure_is_an_authentication_error() -> None:
    error = classify(401, b'{"error":"unauthorized"}')
    assert isinstance(error, AuthenticationError) and not error.retryable


def test_rate_limit_reads_retry_after_seconds_and_request_id() -> None:
    error = classify(429, b'{"error":"too many requests"}', {"Retry-After": "7", "x-request-id": "req_42"})
    assert isinstance(error, RateLimitError)
    assert error.retry_after == 7.0 and error.request_id == "req_42"


def test_retry_after_ms_wins_and_http_dates_are_understood() -> None:
    assert classify(503, b"{}", {"retry-after-ms": "1500", "retry-after": "9"}).retry_after == 1.5
    dated = classify(503, b"{}", {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert dated.retry_after == 0.0  # a date in the past means: now


def test_a_non_json_error_body_keeps_an_excerpt() -> None:
    error = classify(502, b"<html><body>Bad Gateway</body></html>")
    assert isinstance(error, ServerError) and "Bad Gateway" in error.detail
    assert classify(500, b"").detail == "empty error body"
