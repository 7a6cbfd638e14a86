"""Responses API failures -> ProviderError subclasses: HTTP errors, `error` stream events, failed responses.

OpenAI error bodies are `{"error": {"message", "type", "param", "code"}}` (pretty-printed, with or
without a trailing newline). The class comes from the HTTP status first, then the code and the
message text (context overflow is only recognizable from the text). The key fragment OpenAI echoes
in a 401 message is redacted. It never retries or sleeps; the transport decides.
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
from metis_core.transport.retry import parse_retry_after
from metis_core.transport.wire import WireResponse, request_id_from_headers

PROVIDER = "openai_responses"

_CONTEXT_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|too many tokens|"
    r"exceeds the (?:model's )?(?:context|maximum)",
    re.IGNORECASE,
)
_TRY_AGAIN_IN = re.compile(r"try again in (\d+(?:\.\d+)?)\s*(ms|s|seconds?|m|minutes?)\b", re.IGNORECASE)
_ECHOED_KEY = re.compile(r"(Incorrect API key provided:\s*)\S+?(\.?(?:\s|$))")
_KEY_SHAPED = re.compile(r"\bsk-[A-Za-z0-9_*\-]{6,}")

_BY_CODE: dict[str, type[ProviderError]] = {
    "context_length_exceeded": ContextOverflowError,
    "rate_limit_exceeded": RateLimitError,
    "insufficient_quota": OtherProviderError,  # billing, not load: retrying cannot help
    "invalid_api_key": AuthenticationError,
    "server_error": ServerError,
    "internal_error": ServerError,
    "vector_store_timeout": ServerError,
    "model_not_found": InvalidRequestError,
    "invalid_prompt": InvalidRequestError,
}


def redact(message: str) -> str:
    """Remove any API-key fragment a provider echoed back."""
    return _KEY_SHAPED.sub("[redacted key]", _ECHOED_KEY.sub(r"\1[redacted key]\2", message))


def error_type_for(code: str | None, message: str, *, status: int | None = None) -> type[ProviderError]:
    """The class for an error code (HTTP body, `error` event or failed response) and its message."""
    if _CONTEXT_OVERFLOW.search(message) or code == "context_length_exceeded":
        return ContextOverflowError
    if status is not None:
        by_status = _type_for_status(status)
        if by_status is RateLimitError and code == "insufficient_quota":
            return OtherProviderError
        if by_status is not None:
            return by_status
    if code and code in _BY_CODE:
        return _BY_CODE[code]
    if code and (code.startswith("invalid") or code.endswith("_invalid")):
        return InvalidRequestError
    return ServerError if status is None else OtherProviderError


def _type_for_status(status: int) -> type[ProviderError] | None:
    if status in (401, 403):
        return AuthenticationError
    if status == 429:
        return RateLimitError
    if status in (400, 404, 409, 413, 415, 422):
        return InvalidRequestError
    if status == 499:
        return RequestCancelledError
    if status == 408 or status >= 500:
        return ServerError
    return None


def error_class_for(code: str | None, message: str) -> ErrorClass:
    """The canonical error class of an in-stream error (no HTTP status to go by)."""
    return error_type_for(code, message).error_class


def classify_error(response: WireResponse) -> ProviderError:
    """Map a non-2xx Responses API reply to the ProviderError subclass a caller can act on."""
    fields = _error_fields(response.body)
    code = fields.get("code") or fields.get("type")
    message = redact(fields.get("message") or _excerpt(response.body) or f"HTTP {response.status} with an empty body")
    error_type = error_type_for(fields.get("code"), message, status=response.status)
    return error_type(
        _advice(error_type, message),
        provider=PROVIDER,
        status=response.status,
        request_id=request_id_from_headers(response.headers),
        retry_after=retry_after_seconds(response.headers, message),
        provider_code=code,
    )


def _advice(error_type: type[ProviderError], message: str) -> str:
    if error_type is AuthenticationError:
        return f"{message} Check OPENAI_API_KEY (or the openai_responses key in your config)."
    if error_type is ContextOverflowError:
        return f"{message} Shorten the history or route to a model with a larger context window."
    if error_type is OtherProviderError and "quota" in message.lower():
        return f"{message} Add credits or raise the project's usage limit, then try again."
    return message


def _error_fields(body: bytes) -> dict[str, Any]:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    error = parsed.get("error", parsed)
    if isinstance(error, str):
        return {"message": error}
    if not isinstance(error, dict):
        return {}
    return {k: v for k, v in error.items() if isinstance(v, str)}


def _excerpt(body: bytes) -> str:
    return body[:300].decode("utf-8", "replace").strip()


def retry_after_seconds(headers: Mapping[str, str], message: str = "") -> float | None:
    """Seconds to wait: `retry-after-ms`, then `Retry-After` (seconds or HTTP date), then the message."""
    from_headers = parse_retry_after(headers)
    if from_headers is not None:
        return from_headers
    match = _TRY_AGAIN_IN.search(message)
    if match:
        value, unit = float(match.group(1)), match.group(2).lower()
        return value / 1000.0 if unit == "ms" else value * 60.0 if unit.startswith("m") else value
    return None
