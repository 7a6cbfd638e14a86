"""Azure OpenAI failures -> named errors: credentials, missing deployments, content filter, throttling.

Azure's error body is OpenAI's `{"error": {...}}` with Azure codes (`DeploymentNotFound`,
`content_filter` with `innererror.content_filter_result`, `429` with `retry-after` / `retry-after-ms`
headers). What Azure adds is classified here; everything else goes through the OpenAI chat rules.
"""

from __future__ import annotations

from typing import Any

import orjson

from metis_core.adapters.cloud_errors import (
    CloudCredentialsError,
    ContentFilterBlockedError,
    ModelNotEnabledError,
    tripped_categories,
)
from metis_core.adapters.openai_chat.errors import classify_chat_error, redact, retry_hint
from metis_core.errors import ProviderError, RateLimitError
from metis_core.transport.retry import parse_retry_after
from metis_core.transport.wire import WireResponse, request_id_from_headers

_NOT_FOUND_CODES = frozenset({"DeploymentNotFound", "model_not_found", "NotFound", "DeploymentNotReady"})
_AUTH_CODES = frozenset({"401", "invalid_api_key", "PermissionDenied", "AuthenticationTypeDisabled", "Unauthorized"})


def _error_object(body: bytes) -> dict[str, Any]:
    try:
        parsed = orjson.loads(body) if body.strip() else None
    except orjson.JSONDecodeError:
        return {}
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else {}


def content_filter_error(error: dict[str, Any], *, provider: str, status: int | None,
                         request_id: str | None = None) -> ContentFilterBlockedError:
    inner = error.get("innererror")
    inner = inner if isinstance(inner, dict) else {}
    results = inner.get("content_filter_result") or inner.get("content_filter_results") or {}
    categories = tripped_categories(results) or ["unspecified"]
    return ContentFilterBlockedError(
        f"Azure's content filter blocked the prompt (category: {', '.join(categories)}); rephrase the prompt, "
        "adjust the deployment's content filter policy, or route this request to another model",
        provider=provider, status=status, filter_results=results if isinstance(results, dict) else {},
        provider_code=str(error.get("code") or "content_filter"), request_id=request_id,
    )


def classify_azure_error(response: WireResponse, provider: str) -> ProviderError:
    error = _error_object(response.body)
    code = str(error.get("code") or "")
    message = redact(str(error.get("message") or ""))
    request_id = request_id_from_headers(response.headers)
    status = response.status
    if code == "content_filter":
        return content_filter_error(error, provider=provider, status=status, request_id=request_id)
    if status in (401, 403) or code in _AUTH_CODES:
        return CloudCredentialsError(
            f"Azure refused the credentials ({message or f'HTTP {status}'})", provider=provider, platform="azure",
            status=status, provider_code=code or None, request_id=request_id)
    if status == 404 or code in _NOT_FOUND_CODES:
        return ModelNotEnabledError(
            f"{message or 'the deployment was not found'} (the name after `{provider}:` must be a deployment of "
            "this resource; check the endpoint and the deployment name in the Azure portal or AI Foundry)",
            provider=provider, status=status, provider_code=code or None, request_id=request_id)
    if status == 429:
        retry_after = parse_retry_after(response.headers) or retry_hint(error, message)
        wait = f"retry after {retry_after:g} s" if retry_after is not None else "wait and retry"
        return RateLimitError(
            f"{message or 'throttled'} (the deployment's tokens-per-minute quota is used up: {wait}, "
            "raise the deployment's quota, or fall back to another model)",
            provider=provider, status=status, retry_after=retry_after, provider_code=code or None,
            request_id=request_id)
    return classify_chat_error(response, provider)
