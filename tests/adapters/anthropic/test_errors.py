"""Every recorded Anthropic error body, served with its status, maps to the right ProviderError."""

from __future__ import annotations

import httpx
import pytest
from fixture_files import read_bytes, wire_files
from mock_http import API_KEY, MODEL, serve

from metis_core.adapters.anthropic.errors import classify_error
from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from metis_core.messages import user_message
from metis_core.transport.retry import RetryPolicy
from metis_core.transport.wire import WireResponse

HISTORY = [user_message("hello")]

# name -> (status, class, provider_code, request_id expected (header or body), text in message)
EXPECTED: dict[str, tuple[int, type[ProviderError], str, str, str]] = {
    "error__400_invalid_request_error_bad_shape.json": (
        400,
        InvalidRequestError,
        "invalid_request_error",
        "req_01N7iW6qh7wHr9je4z3FDn2n",
        "Input does not match the expected shape",
    ),
    "error__400_invalid_request_error_tool_result_mismatch.json": (
        400,
        InvalidRequestError,
        "invalid_request_error",
        "req_011CYHyk9NPsBYeGbC9LuDNK",
        "unexpected `tool_use_id` found",
    ),
    "error__401_authentication_error.json": (
        401,
        AuthenticationError,
        "authentication_error",
        "req_013JyjhVcnhy8mfJkvBTqMNB",
        "invalid x-api-key",
    ),
    "error__404_not_found_error.json": (
        404,
        InvalidRequestError,
        "not_found_error",
        "req_011CdufXo8Y2LVfY2veyuQWG",
        "model: claude-sonet-4-5",
    ),
    "error__429_rate_limit_error.json": (
        429,
        RateLimitError,
        "rate_limit_error",
        "req_011CYK5mje9HkutJtmfPzzNC",
        "exceed your organization's rate limit",
    ),
    "error__529_overloaded_error.json": (529, ServerError, "overloaded_error", "req_hdr_529", "Overloaded"),
}
# request ids the recordings carried as a response header rather than in the body
HEADER_REQUEST_IDS = {
    "error__400_invalid_request_error_bad_shape.json": "req_01N7iW6qh7wHr9je4z3FDn2n",
    "error__401_authentication_error.json": "req_013JyjhVcnhy8mfJkvBTqMNB",
    "error__529_overloaded_error.json": "req_hdr_529",
}


def test_every_error_fixture_is_covered() -> None:
    assert {p.name for p in wire_files("anthropic", "error")} == set(EXPECTED)


def _response(name: str) -> httpx.Response:
    status = EXPECTED[name][0]
    headers = {"content-type": "application/json"}
    if name in HEADER_REQUEST_IDS:
        headers["request-id"] = HEADER_REQUEST_IDS[name]
    if status == 429:
        headers["retry-after"] = "17"
    return httpx.Response(status, content=read_bytes("anthropic", name), headers=headers)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_error_body_maps_to_class_status_code_and_request_id(name: str) -> None:
    status, cls, code, request_id, text = EXPECTED[name]
    client, server = serve(_response(name))
    with pytest.raises(cls) as raised:
        client.complete(HISTORY, model=MODEL)
    error = raised.value
    assert type(error) is cls
    assert (error.status, error.provider, error.provider_code, error.request_id) == (
        status,
        "anthropic",
        code,
        request_id,
    )
    assert text in str(error)
    assert API_KEY not in str(error) and API_KEY not in repr(error)
    assert error.retry_count == 0
    assert len(server.requests) == 1


def test_rate_limit_carries_retry_after_from_the_header_and_is_retried_after_it() -> None:
    sleeps: list[float] = []
    ok = httpx.Response(200, content=read_bytes("anthropic", "response__text.json"))
    client, server = serve(
        _response("error__429_rate_limit_error.json"), ok, retry=RetryPolicy(max_retries=2, sleep=sleeps.append)
    )
    message = client.complete(HISTORY, model=MODEL)
    assert message.text().startswith("The weather in SF")
    assert sleeps == [17.0] and len(server.requests) == 2


def test_overloaded_529_is_retried_until_the_limit_and_reports_retry_count() -> None:
    sleeps: list[float] = []
    client, server = serve(
        _response("error__529_overloaded_error.json"),
        retry=RetryPolicy(max_retries=2, sleep=sleeps.append, random=lambda: 0.5),
    )
    with pytest.raises(ServerError) as raised:
        client.complete(HISTORY, model=MODEL)
    assert raised.value.retry_count == 2 and raised.value.retryable
    assert len(server.requests) == 3 and sleeps == [0.5, 1.0]


def test_authentication_error_is_never_retried() -> None:
    sleeps: list[float] = []
    client, server = serve(
        _response("error__401_authentication_error.json"), retry=RetryPolicy(max_retries=3, sleep=sleeps.append)
    )
    with pytest.raises(AuthenticationError, match="ANTHROPIC_API_KEY"):
        client.complete(HISTORY, model=MODEL)
    assert len(server.requests) == 1 and sleeps == []


def test_prompt_too_long_is_a_context_overflow_not_a_plain_invalid_request() -> None:
    body = (
        b'{"type":"error","error":{"type":"invalid_request_error",'
        b'"message":"prompt is too long: 215000 tokens > 200000 maximum"}}'
    )
    error = classify_error(WireResponse(400, body, {"request-id": "req_1"}))
    assert isinstance(error, ContextOverflowError) and not error.retryable
    assert "compact the session" in str(error)


@pytest.mark.parametrize(
    ("status", "cls"), [(502, ServerError), (503, ServerError), (403, AuthenticationError), (418, InvalidRequestError)]
)
def test_non_json_error_bodies_fall_back_to_the_status(status: int, cls: type[ProviderError]) -> None:
    error = classify_error(WireResponse(status, b"<html>upstream trouble</html>", {}))
    assert type(error) is cls and error.status == status
    assert "upstream trouble" in str(error)


def test_retry_after_ms_header_wins_over_seconds() -> None:
    body = read_bytes("anthropic", "error__429_rate_limit_error.json")
    error = classify_error(WireResponse(429, body, {"retry-after-ms": "250", "retry-after": "1"}))
    assert error.retry_after == 0.25
