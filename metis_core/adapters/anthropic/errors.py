"""Anthropic error bodies and statuses -> the ProviderError class a caller acts on.

Bodies look like `{"type": "error", "error": {"type": "rate_limit_error", "message": ...},
"request_id": ...}`; the same `error` object arrives as an `event: error` inside streams. The
`error.type` decides the class, the HTTP status is the fallback (e.g. an HTML 502 from a proxy).
Overloaded (529) is a retryable ServerError; "prompt is too long" is a ContextOverflowError.
"""

from __future__ import annotations

import re

import orjson

from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    ErrorClass,
    InvalidRequestError,
    OtherProviderError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from metis_core.transport.retry import parse_retry_after
from metis_core.transport.wire import WireResponse, request_id_from_headers

PROVIDER = "anthropic"

ERROR_TYPE_CLASSES: dict[str, type[ProviderError]] = {
    "invalid_request_error": InvalidRequestError,
    "not_found_error": InvalidRequestError,
    "request_too_large": InvalidRequestError,
    "authentication_error": AuthenticationError,
    "permission_error": AuthenticationError,
    "billing_error": AuthenticationError,
    "rate_limit_error": RateLimitError,
    "api_error": ServerError,
    "overloaded_error": ServerError,
    "timeout_error": ServerError,
}

# A pattern string, compiled (and cached) by `re` on the first error: importing stays cheap.
_CONTEXT_OVERFLOW = (
    r"(?i)prompt is too long|context (window|length)|exceeds? (the )?(maximum )?context|input length .* exceed"
)

_NEXT_STEP: dict[type[ProviderError], str] = {
    AuthenticationError: "check ANTHROPIC_API_KEY (or providers.anthropic in config.yaml)",
    RateLimitError: "wait and retry, or switch to another model",
    ServerError: "Anthropic is overloaded or failing; retry shortly or fall back to another model",
    ContextOverflowError: "compact the session or switch to a model with a larger context",
}


def _text_or_none(value: object) -> str | None:
    """A field read from an error body: strings as they are, anything else (odd bodies) dropped."""
    return value if isinstance(value, str) and value else None


def class_for(error_type: str | None, status: int | None, message: str) -> type[ProviderError]:
    found = ERROR_TYPE_CLASSES.get(error_type if isinstance(error_type, str) else "")
    if found is None:
        if status in (401, 403):
            found = AuthenticationError
        elif status == 429:
            found = RateLimitError
        elif status is not None and (status >= 500 or status == 408):
            found = ServerError
        elif status is not None and 400 <= status < 500:
            found = InvalidRequestError
        else:
            found = OtherProviderError
    if found is InvalidRequestError and re.search(_CONTEXT_OVERFLOW, message):
        found = ContextOverflowError
    return found


def error_class_name(error: object) -> tuple[ErrorClass, str]:
    """For an `error` object inside a stream: the canonical class and the message."""
    if not isinstance(error, dict):
        return ErrorClass.OTHER, f"stream error event with an unreadable error object: {str(error)[:200]!r}"
    error_type = _text_or_none(error.get("type"))
    message = _text_or_none(error.get("message")) or error_type or "stream error"
    return class_for(error_type, None, message).error_class, message


def classify_error(response: WireResponse) -> ProviderError:
    error_type: str | None = None
    message = ""
    request_id = request_id_from_headers(response.headers)
    try:
        body = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            error_type = _text_or_none(error.get("type"))
            message = _text_or_none(error.get("message")) or ""
        request_id = request_id or _text_or_none(body.get("request_id"))
    if not message:
        excerpt = response.body[:200].decode("utf-8", "replace").strip()
        message = excerpt or f"HTTP {response.status} with an empty body"
    cls = class_for(error_type, response.status, message)
    hint = _NEXT_STEP.get(cls)
    if hint:
        message = f"{message} ({hint})"
    return cls(
        message,
        provider=PROVIDER,
        status=response.status,
        request_id=request_id,
        retry_after=parse_retry_after(response.headers),
        provider_code=error_type,
    )
