"""Gemini error bodies (`{"error": {code, message, status, details}}`) -> ProviderError subclasses.

Classification uses the HTTP status, Google's canonical status string and, for 400s, the message
(context overflow, invalid API key). `retry_after` comes from the RetryInfo detail's `retryDelay`,
then a Retry-After header, then "Please retry in N s" in the message. Messages end with what to do
next. Nothing here reads request headers, so a key can never leak into an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    ErrorClass,
    InvalidRequestError,
    OtherProviderError,
    ProviderError,
    RateLimitError,
    RequestCancelledError,
    ServerError,
)
from metis_core.transport.wire import WireResponse, request_id_from_headers

PROVIDER = "gemini"

_OVERFLOW = re.compile(r"input token count.*exceeds|exceeds the maximum number of tokens|context window",
                       re.IGNORECASE | re.DOTALL)
_BAD_KEY = re.compile(r"API key not valid|API_KEY_INVALID|API key expired", re.IGNORECASE)
_RETRY_IN = re.compile(r"retry in ([0-9]+(?:\.[0-9]+)?)\s*s", re.IGNORECASE)
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)s$")

_STATUS_CLASS = {
    "RESOURCE_EXHAUSTED": ErrorClass.RATE_LIMIT,
    "UNAUTHENTICATED": ErrorClass.AUTH,
    "PERMISSION_DENIED": ErrorClass.AUTH,
    "UNAVAILABLE": ErrorClass.SERVER_ERROR,
    "INTERNAL": ErrorClass.SERVER_ERROR,
    "DEADLINE_EXCEEDED": ErrorClass.SERVER_ERROR,
    "CANCELLED": ErrorClass.CANCELLED,
    "NOT_FOUND": ErrorClass.INVALID_REQUEST,
    "INVALID_ARGUMENT": ErrorClass.INVALID_REQUEST,
    "FAILED_PRECONDITION": ErrorClass.INVALID_REQUEST,
    "OUT_OF_RANGE": ErrorClass.INVALID_REQUEST,
}
_CLASS_TYPE: dict[ErrorClass, type[ProviderError]] = {
    ErrorClass.RATE_LIMIT: RateLimitError,
    ErrorClass.AUTH: AuthenticationError,
    ErrorClass.SERVER_ERROR: ServerError,
    ErrorClass.CONTEXT_OVERFLOW: ContextOverflowError,
    ErrorClass.INVALID_REQUEST: InvalidRequestError,
    ErrorClass.CANCELLED: RequestCancelledError,
    ErrorClass.OTHER: OtherProviderError,
}
_NEXT_STEP = {
    ErrorClass.RATE_LIMIT: "wait and retry, or check the project's Gemini quota",
    ErrorClass.AUTH: "check GEMINI_API_KEY (or GOOGLE_API_KEY) and that the key may call this model",
    ErrorClass.SERVER_ERROR: "Gemini had a transient failure; retry, or fall back to another model",
    ErrorClass.CONTEXT_OVERFLOW: "shorten the history or use a model with a larger context window",
    ErrorClass.INVALID_REQUEST: "fix the request (the message says what Gemini rejected)",
    ErrorClass.CANCELLED: "the request was cancelled; send it again if it is still wanted",
    ErrorClass.OTHER: "retry; if it persists, report the body above",
}


def error_class_for(http_status: int | None, status: str | None, message: str) -> ErrorClass:
    """The canonical class for a Gemini failure (also used for error objects inside a stream)."""
    if _BAD_KEY.search(message):
        return ErrorClass.AUTH
    if _OVERFLOW.search(message) and (http_status in (None, 400) or status == "INVALID_ARGUMENT"):
        return ErrorClass.CONTEXT_OVERFLOW
    if http_status == 429:
        return ErrorClass.RATE_LIMIT
    if http_status in (401, 403):
        return ErrorClass.AUTH
    if http_status == 499:
        return ErrorClass.CANCELLED
    if http_status is not None and http_status >= 500:
        return ErrorClass.SERVER_ERROR
    if status in _STATUS_CLASS:
        return _STATUS_CLASS[status]
    if http_status in (400, 404, 409, 413, 422):
        return ErrorClass.INVALID_REQUEST
    return ErrorClass.OTHER


def retry_delay_seconds(error: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> float | None:
    for detail in error.get("details") or ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    if headers is not None:
        header = headers.get("retry-after") or headers.get("Retry-After")
        if header:
            try:
                return float(header)
            except ValueError:
                pass
    match = _RETRY_IN.search(str(error.get("message", "")))
    return float(match.group(1)) if match else None


def error_object(body: bytes) -> dict[str, Any] | None:
    """The `error` object of a body (also inside the one-element list a stream error may send)."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(parsed, list) and parsed:
        parsed = parsed[0]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else None


def classify_gemini_error(response: WireResponse) -> ProviderError:
    error = error_object(response.body)
    if error is None:
        excerpt = response.body[:200].decode("utf-8", "replace").strip()
        error = {"message": f"non-JSON error body: {excerpt!r}" if excerpt else "empty error body"}
    message = str(error.get("message") or "no message")
    status = error.get("status") if isinstance(error.get("status"), str) else None
    klass = error_class_for(response.status, status, message)
    return _CLASS_TYPE[klass](
        f"{message.rstrip()} — {_NEXT_STEP[klass]}",
        provider=PROVIDER,
        status=response.status,
        request_id=request_id_from_headers(response.headers),
        retry_after=retry_delay_seconds(error, response.headers),
        provider_code=status,
    )
