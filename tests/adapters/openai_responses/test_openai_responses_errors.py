"""Responses API HTTP errors -> ProviderError classes with status, request id, retry hints and no secrets."""

from __future__ import annotations

import pytest
from adapters.openai_responses.responses_oracle import PROVIDER
from fixture_files import read_bytes, wire_files

from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    OtherProviderError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from metis_core.transport.wire import WireResponse

ADAPTER = OpenAIResponsesAdapter()

# name -> (status, class, provider_code, words the message keeps)
EXPECTED: dict[str, tuple[int, type[ProviderError], str, str]] = {
    "error__400_decimal_below_min_value.json": (
        400,
        InvalidRequestError,
        "decimal_below_min_value",
        "Invalid 'temperature': decimal below minimum value",
    ),
    # model_not_found is a 400 here: the request names a model this key cannot use. Not retryable; a
    # fallback chain moves on to its next model.
    "error__400_model_not_found.json": (
        400,
        InvalidRequestError,
        "model_not_found",
        "The requested model 'gpt-5.2-proo' does not exist.",
    ),
    "error__400_reasoning_item_without_following_item.json": (
        400,
        InvalidRequestError,
        "invalid_request_error",
        "was provided without its required following item",
    ),
    "error__401_invalid_api_key.json": (401, AuthenticationError, "invalid_api_key", "Incorrect API key provided"),
}


def classify(status: int, body: bytes, headers: dict[str, str] | None = None) -> ProviderError:
    return ADAPTER.classify_error(WireResponse(status, body, headers or {}))


def test_every_error_sample_has_an_expectation() -> None:
    assert {p.name for p in wire_files(PROVIDER, "error")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_recorded_error_maps_to_its_class_with_status_code_and_request_id(name: str) -> None:
    status, cls, code, words = EXPECTED[name]
    body = read_bytes(PROVIDER, name)
    error = classify(status, body, {"x-request-id": "req_7f3a"})
    assert type(error) is cls
    assert (error.status, error.provider_code, error.request_id, error.provider) == (status, code, "req_7f3a", PROVIDER)
    assert words in str(error)
    assert not error.retryable


def test_the_401_body_is_2_space_pretty_printed_without_a_trailing_newline_and_the_key_is_redacted() -> None:
    body = read_bytes(PROVIDER, "error__401_invalid_api_key.json")
    assert body.startswith(b'{\n  "error": {\n    "message"') and not body.endswith(b"\n")
    error = classify(401, body)
    assert "<not-a-r****key>" not in str(error) and "[redacted key]" in str(error)
    assert "OPENAI_API_KEY" in str(error)  # says what to do next
    leaked = classify(
        401,
        b'{"error": {"message": "Incorrect API key provided: sk-proj-abcdef123456. See docs.", '
        b'"code": "invalid_api_key"}}',
    )
    assert "sk-proj-abcdef123456" not in str(leaked) and "abcdef" not in repr(leaked.detail)


def test_rate_limits_are_retryable_and_carry_the_wait_from_headers_or_the_message() -> None:
    body = (
        b'{"error": {"message": "Rate limit reached for gpt-5 on tokens per min. Please try again in 6.5s.", '
        b'"type": "tokens", "code": "rate_limit_exceeded"}}'
    )
    from_message = classify(429, body)
    assert isinstance(from_message, RateLimitError) and from_message.retryable
    assert from_message.retry_after == pytest.approx(6.5)
    assert classify(429, body, {"retry-after-ms": "1200"}).retry_after == pytest.approx(1.2)
    assert classify(429, body, {"Retry-After": "3"}).retry_after == pytest.approx(3.0)
    millis = classify(429, b'{"error": {"message": "Please try again in 20ms.", "code": "rate_limit_exceeded"}}')
    assert millis.retry_after == pytest.approx(0.02)


def test_an_exhausted_quota_is_not_a_rate_limit_and_is_not_retried() -> None:
    error = classify(
        429,
        b'{"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota", '
        b'"code": "insufficient_quota"}}',
    )
    assert type(error) is OtherProviderError and not error.retryable and "Add credits" in str(error)


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_retryable_even_with_an_html_body(status: int) -> None:
    error = classify(status, b"<html><body>upstream connect error</body></html>")
    assert isinstance(error, ServerError) and error.retryable and "upstream connect error" in str(error)


def test_context_overflow_is_recognized_from_the_code_or_the_message() -> None:
    by_code = classify(
        400,
        b'{"error": {"message": "Your input exceeds the context window of this model. Please '
        b'adjust your input and try again.", "type": "invalid_request_error", '
        b'"code": "context_length_exceeded"}}',
    )
    by_text = classify(
        400,
        b'{"error": {"message": "This model\'s maximum context length is 128000 tokens.", '
        b'"type": "invalid_request_error", "code": null}}',
    )
    assert isinstance(by_code, ContextOverflowError) and isinstance(by_text, ContextOverflowError)
    assert "larger context window" in str(by_code)


def test_an_empty_error_body_still_names_the_status() -> None:
    error = classify(404, b"")
    assert isinstance(error, InvalidRequestError) and "HTTP 404" in str(error)
