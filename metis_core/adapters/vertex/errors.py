"""Vertex AI failures -> named errors: credentials, models not enabled, quota, then the provider's rules.

Vertex's front end answers in Google's shape (`{"error": {code, message, status}}`) for both
publishers: UNAUTHENTICATED / PERMISSION_DENIED say how to log in, NOT_FOUND says the model is not
enabled in the project or region, RESOURCE_EXHAUSTED carries its retry delay. Anything else goes
through the Gemini or Anthropic rules, renamed to the Vertex provider.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters.cloud_errors import CloudCredentialsError, ModelNotEnabledError
from metis_core.adapters.gemini.errors import error_object, retry_delay_seconds
from metis_core.errors import ProviderError, RateLimitError
from metis_core.transport.wire import WireResponse, request_id_from_headers


def google_error(body: bytes) -> dict[str, Any] | None:
    """The Google-shaped `error` object of a body (a stream may wrap it in a one-element list):
    Gemini's, with a `status` name or a numeric `code`."""
    error = error_object(body)
    if error is not None and (isinstance(error.get("status"), str) or isinstance(error.get("code"), int)):
        return error
    return None


def renamed(error: ProviderError, provider: str) -> ProviderError:
    """The same failure reported by `provider` (the shared rules name their own provider)."""
    return type(error)(error.detail, provider=provider, status=error.status, request_id=error.request_id,
                       retry_after=error.retry_after, provider_code=error.provider_code)


def classify_vertex_error(response: WireResponse, provider: str) -> ProviderError | None:
    """The named error for a Vertex front-end failure, or None to let the publisher's rules decide."""
    error = google_error(response.body)
    if error is None:
        return None
    status = error.get("status") if isinstance(error.get("status"), str) else None
    message = str(error.get("message") or f"HTTP {response.status}").rstrip()
    request_id = request_id_from_headers(response.headers)
    if response.status == 401 or status == "UNAUTHENTICATED":
        return CloudCredentialsError(f"Vertex AI refused the credentials ({message})", provider=provider,
                                     platform="vertex", status=response.status, provider_code=status,
                                     request_id=request_id)
    if response.status == 403 or status == "PERMISSION_DENIED":
        return CloudCredentialsError(
            f"Vertex AI denied access ({message}); the principal needs roles/aiplatform.user on the project and "
            "the Vertex AI API must be enabled", provider=provider, platform="vertex", status=response.status,
            provider_code=status, request_id=request_id)
    if response.status == 404 or status == "NOT_FOUND":
        return ModelNotEnabledError(
            f"{message} (enable the model for this project in Model Garden, check that it is offered in the "
            "location (GOOGLE_CLOUD_LOCATION; `global` serves most current models) and the model id's version)",
            provider=provider, status=response.status, provider_code=status, request_id=request_id)
    if response.status == 429 or status == "RESOURCE_EXHAUSTED":
        retry_after = retry_delay_seconds(error, response.headers)
        wait = f"retry after {retry_after:g} s" if retry_after is not None else "wait and retry"
        return RateLimitError(
            f"{message} (the project's Vertex AI quota for this model and region is used up: {wait}, request "
            "more quota, use the `global` location, or fall back to another model)",
            provider=provider, status=response.status, retry_after=retry_after, provider_code=status,
            request_id=request_id)
    return None
