"""Ollama error bodies (`{"error": "..."}`) and statuses -> the ProviderError hierarchy.

Ollama has no error codes or request ids: classes come from the HTTP status, refined by the text
(a missing model, a prompt longer than the context). The same text rules classify an `{"error"}`
line that arrives inside a 200 NDJSON stream. Connection failures (nothing listening on
127.0.0.1:11434) never reach this module: the transport raises NetworkError for them.
"""

from __future__ import annotations

import re
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
    ServerError,
)
from metis_core.transport.retry import parse_retry_after
from metis_core.transport.wire import WireResponse, request_id_from_headers

PROVIDER = "ollama"

_CONTEXT_OVERFLOW = re.compile(
    r"context (length|window|size)|exceeds? (the )?(maximum )?context|too many tokens|prompt is too long|"
    r"input length exceeds",
    re.IGNORECASE,
)
_MODEL_MISSING = re.compile(r"model ['\"]?(?P<model>[^'\"]+?)['\"]? not found", re.IGNORECASE)


def error_text(body: bytes) -> str:
    """The `error` string of an Ollama error body, else a short excerpt of whatever came back."""
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        message = data.get("error")
        if isinstance(message, str) and message:
            return message
        if isinstance(message, dict) and isinstance(message.get("message"), str):
            return str(message["message"])  # OpenAI-style bodies from proxies in front of Ollama
    excerpt = body[:300].decode("utf-8", "replace").strip()
    return excerpt or "empty error body"


def error_class_for_text(message: str) -> ErrorClass:
    """Class of an error that arrived without a useful status (inside a stream)."""
    if _CONTEXT_OVERFLOW.search(message):
        return ErrorClass.CONTEXT_OVERFLOW
    if _MODEL_MISSING.search(message):
        return ErrorClass.INVALID_REQUEST
    return ErrorClass.SERVER_ERROR


def classify_ollama_error(response: WireResponse) -> ProviderError:
    status = response.status
    message = error_text(response.body)
    fields: dict[str, Any] = {
        "provider": PROVIDER,
        "status": status,
        "request_id": request_id_from_headers(response.headers),
        "retry_after": parse_retry_after(response.headers),
    }
    missing = _MODEL_MISSING.search(message)
    if status in (401, 403):
        return AuthenticationError(
            f"{message}; local Ollama needs no key, a hosted endpoint needs a valid one "
            "(check the ollama api key in your config)",
            **fields,
        )
    if status == 429:
        return RateLimitError(message, **fields)
    if _CONTEXT_OVERFLOW.search(message) or status == 413:
        return ContextOverflowError(f"{message}; shorten the conversation or raise num_ctx (options.num_ctx)", **fields)
    if missing is not None:
        # Not retryable: pulling a model takes minutes and is the user's decision.
        return InvalidRequestError(
            f"{message}; run `ollama pull {missing.group('model')}` or pick an installed model (`ollama list`)",
            provider_code="model_not_found",
            **fields,
        )
    if status == 404:
        return InvalidRequestError(
            f"{message}; is the base URL an Ollama server (it should answer POST /api/chat)?", **fields
        )
    if status >= 500:
        return ServerError(message, **fields)
    if 400 <= status < 500:
        return InvalidRequestError(message, **fields)
    return OtherProviderError(message, **fields)
