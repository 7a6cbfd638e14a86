"""Gemini error bodies -> the right ProviderError class, with status, request id and retry_after."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest
from fixture_files import read_bytes, wire_files
from mock_http import serve

from metis_core.adapters.gemini.adapter import GeminiAdapter
from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    OtherProviderError,
    ProviderError,
    RateLimitError,
    RequestCancelledError,
    ServerError,
)
from metis_core.messages import user_message
from metis_core.transport.wire import WireResponse

FIXTURES: dict[str, tuple[int, type[ProviderError], str, float | None]] = {
    "error__400_invalid_argument_vertex_url_fetch.json": (400, InvalidRequestError, "INVALID_ARGUMENT", None),
    "error__404_not_found_model.json": (404, InvalidRequestError, "NOT_FOUND", None),
    "error__429_resource_exhausted_quota.json": (429, RateLimitError, "RESOURCE_EXHAUSTED", 58.0),
}


def test_every_error_fixture_has_expectations() -> None:
    assert {p.name for p in wire_files("gemini", "error")} == set(FIXTURES)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_recorded_error_maps_to_its_class_through_model_client(name: str) -> None:
    status, klass, code, retry_after = FIXTURES[name]
    client, _ = serve(httpx.Response(status, content=read_bytes("gemini", name),
                                     headers={"x-goog-request-id": "req-gem-1"}),
                      provider="gemini", api_key="AIza-test-SECRET")
    with pytest.raises(ProviderError) as raised:
        client.complete([user_message("hi")], model="gemini:gemini-2.5-flash")
    error = raised.value
    assert type(error) is klass
    assert (error.status, error.provider_code, error.retry_after, error.request_id) == (
        status, code, retry_after, "req-gem-1")
    assert error.provider == "gemini"
    assert "SECRET" not in str(error) and "SECRET" not in repr(error)


def test_quota_error_prefers_the_retry_info_delay_over_the_message_hint() -> None:
    body = read_bytes("gemini", "error__429_resource_exhausted_quota.json")
    error = GeminiAdapter().classify_error(WireResponse(429, body))
    assert error.retry_after == 58.0  # RetryInfo says 58s; the message says 58.217843437s
    assert error.retryable


def test_missing_model_error_says_what_to_do_next() -> None:
    body = read_bytes("gemini", "error__404_not_found_model.json")
    error = GeminiAdapter().classify_error(WireResponse(404, body))
    assert "gemini-3.6-flahs is not found" in str(error)
    assert "fix the request" in str(error)
    assert not error.retryable


def _body(code: int, status: str, message: str) -> bytes:
    return orjson.dumps({"error": {"code": code, "message": message, "status": status}})


@pytest.mark.parametrize(
    ("status", "body", "klass"),
    [
        (400, _body(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of "
                    "tokens allowed (1048576)."), ContextOverflowError),
        (400, _body(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."), AuthenticationError),
        (401, _body(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."), AuthenticationError),
        (403, _body(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."), AuthenticationError),
        (500, _body(500, "INTERNAL", "An internal error has occurred."), ServerError),
        (503, _body(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), ServerError),
        (504, _body(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."), ServerError),
        (499, _body(499, "CANCELLED", "The operation was cancelled."), RequestCancelledError),
        (502, b"<html>Bad Gateway</html>", ServerError),
        (418, b"", OtherProviderError),
    ],
)
def test_status_and_body_choose_the_error_class(status: int, body: bytes, klass: type[ProviderError]) -> None:
    error = GeminiAdapter().classify_error(WireResponse(status, body))
    assert type(error) is klass
    assert error.status == status


def test_an_error_list_body_is_read_like_a_single_error() -> None:
    body = b'[{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}]'
    error = GeminiAdapter().classify_error(WireResponse(503, body, {"retry-after": "7"}))
    assert type(error) is ServerError and error.retry_after == 7.0 and error.provider_code == "UNAVAILABLE"


HELDOUT = Path(__file__).resolve().parents[2] / "data" / "heldout" / "gemini"
HELDOUT_ERRORS: dict[str, tuple[int, type[ProviderError], str, float | None]] = {
    "error__vercel_google_429_retry_info.json": (429, RateLimitError, "RESOURCE_EXHAUSTED", 34.4),
}


def test_every_held_out_error_has_expectations() -> None:
    assert {p.name for p in HELDOUT.glob("error__*")} == set(HELDOUT_ERRORS)


@pytest.mark.parametrize("name", sorted(HELDOUT_ERRORS))
def test_a_held_out_error_maps_to_its_class(name: str) -> None:
    status, klass, code, retry_after = HELDOUT_ERRORS[name]
    client, _ = serve(httpx.Response(status, content=(HELDOUT / name).read_bytes()), provider="gemini")
    with pytest.raises(klass) as raised:
        client.complete([user_message("hi")], model="gemini:gemini-2.5-flash")
    assert (raised.value.status, raised.value.provider_code, raised.value.retry_after) == (status, code, retry_after)
