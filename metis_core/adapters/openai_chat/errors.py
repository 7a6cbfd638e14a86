"""Chat Completions failures -> the ProviderError class a caller can act on.

Reads the HTTP status, the `error` object (pretty-printed or compact, `code` a string or, at
OpenRouter, an integer) and the headers (request id, Retry-After). The same rules classify an error
object that arrives inside an HTTP-200 stream. It never keeps a secret: key fragments that a
provider echoes back are redacted from the message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    NetworkError,
    OtherProviderError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from metis_core.transport.retry import parse_retry_after
from metis_core.transport.wire import WireResponse, request_id_from_headers

_OVERFLOW_CODES = frozenset({"context_length_exceeded", "string_above_max_length"})
# Pattern strings, compiled (and cached) by `re` on the first error: importing stays cheap.
_OVERFLOW_TEXT = (
    r"(?i)context[ _]length|context window|maximum context|prompt is too long|too many tokens in|"
    r"reduce the length of the messages"
)
# "insufficient_quota" arrives as HTTP 429 but is a billing state: retrying cannot succeed.
_BILLING_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})
_AUTH_CODES = frozenset({"invalid_api_key", "invalid_organization", "no_such_organization"})
_RETRY_HINT = r"(?i)(?:try again|retry after|retry in)\s+(?:in\s+)?(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?)\b"
_KEY_ECHO = r"(?i)(API key provided:\s*)\S+|\b(sk-[A-Za-z0-9_\-*]{6,})"

_NEXT_STEP: dict[type[ProviderError], str] = {
    AuthenticationError: "check the API key (and billing) configured for this provider",
    ContextOverflowError: "shorten the conversation or route to a model with a larger context window",
    RateLimitError: "wait and retry, or fall back to another model",
    ServerError: "the provider failed; retry later or fall back to another model",
    InvalidRequestError: "the request was rejected as sent; check the model name and options",
}


def redact(text: str) -> str:
    """Remove API-key fragments that providers echo back in error messages."""
    return re.sub(_KEY_ECHO, lambda m: f"{m.group(1)}[redacted]" if m.group(1) else "[redacted]", text)


def _error_object(body: Any) -> dict[str, Any]:
    """The `error` object of a body, whatever shape the server chose."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return error
        if isinstance(error, str):  # llama.cpp and some proxies: {"error": "text"}
            return {"message": error}
        if isinstance(body.get("detail"), str):  # FastAPI-based servers (vLLM)
            return {"message": body["detail"]}
        if isinstance(body.get("message"), str):
            return {"message": body["message"], "code": body.get("code")}
    return {}


def retry_hint(error: Mapping[str, Any], message: str) -> float | None:
    """Seconds to wait suggested by the body: OpenRouter `availability.retry_after`, or the text."""
    availability = error.get("availability")
    if isinstance(availability, dict) and isinstance(availability.get("retry_after"), int | float):
        return float(availability["retry_after"])
    match = re.search(_RETRY_HINT, message)
    if match is None:
        return None
    value = float(match.group(1))
    return value / 1000.0 if match.group(2).lower() == "ms" else value


def error_class_for(status: int | None, code: str, error_type: str, message: str) -> type[ProviderError]:
    """Pick the class from the code first (most specific), then the status, then the text."""
    if code in _OVERFLOW_CODES or re.search(_OVERFLOW_TEXT, message):
        return ContextOverflowError
    if code in _BILLING_CODES or error_type in _BILLING_CODES:
        return AuthenticationError
    if code in _AUTH_CODES:
        return AuthenticationError
    if code in {"rate_limit_exceeded", "rate_limited"} or error_type in {"rate_limit_exceeded", "requests", "tokens"}:
        return RateLimitError
    if code in {"server_error", "internal_error"} or error_type in {"server_error", "overloaded_error"}:
        return ServerError
    if status is None:
        return OtherProviderError
    if status in (401, 402, 403):
        return AuthenticationError
    if status == 408:
        return NetworkError
    if status == 429:
        return RateLimitError
    if status == 409 or status >= 500:
        return ServerError
    if 400 <= status < 500:
        return InvalidRequestError
    return OtherProviderError


def provider_error(
    error: Mapping[str, Any],
    *,
    provider: str,
    status: int | None,
    headers: Mapping[str, str] | None = None,
    request_id: str | None = None,
) -> ProviderError:
    """Build the ProviderError for one error object (from a body or from a stream chunk); the request
    id comes from the headers, else from the body's `request_id` (Fireworks puts it there too)."""
    raw_code = error.get("code")
    if isinstance(raw_code, int) and status is None:
        status = raw_code  # OpenRouter stream errors carry the HTTP-like status as `code`
    code = raw_code if isinstance(raw_code, str) else ""
    metadata = error.get("metadata")
    error_type = ""
    for candidate in (
        error.get("type"),
        metadata.get("error_type") if isinstance(metadata, dict) else None,
        error.get("error_type"),
    ):
        if isinstance(candidate, str) and candidate:
            error_type = candidate
            break
    message = redact(str(error.get("message") or "no error message in the response"))
    if isinstance(metadata, dict) and isinstance(metadata.get("raw"), str):
        message = f"{message}: {redact(metadata['raw'])}"
    cls = error_class_for(status, code, error_type, message)
    headers = headers or {}
    retry_after = parse_retry_after(headers)
    if retry_after is None and cls in (RateLimitError, ServerError):
        retry_after = retry_hint(error, message)
    next_step = _NEXT_STEP.get(cls)
    if code in _BILLING_CODES or error_type in _BILLING_CODES or status == 402:
        next_step = "the account has no quota or credit left; check the plan and billing, retrying will not help"
    return cls(
        f"{message} ({next_step})" if next_step else message,
        provider=provider,
        status=status,
        request_id=request_id_from_headers(headers) or request_id,
        retry_after=retry_after,
        provider_code=code or error_type or None,
    )


def classify_chat_error(response: WireResponse, provider: str) -> ProviderError:
    """Map a non-2xx chat response to its ProviderError (bodies that are not JSON included)."""
    try:
        body = orjson.loads(response.body) if response.body.strip() else None
    except orjson.JSONDecodeError:
        body = None
    error = _error_object(body)
    if not error:
        excerpt = response.body[:200].decode("utf-8", "replace").strip()
        error = {"message": excerpt or f"HTTP {response.status} with an empty body"}
    body_request_id = body.get("request_id") if isinstance(body, dict) else None
    return provider_error(error, provider=provider, status=response.status, headers=response.headers,
                          request_id=body_request_id if isinstance(body_request_id, str) else None)
