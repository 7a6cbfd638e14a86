"""Named failures of the cloud platforms (Azure OpenAI, Vertex AI): credentials, extras, models, filters.

Each class says what to do next in its message and sits under the ProviderError class a caller
already handles (retry, fall back, fix the request). Messages are built from fixed text plus the
provider's own error text (scrubbed by ProviderError); a token or key is never put in one.
"""

from __future__ import annotations

from typing import Any

from metis_core.errors import AuthenticationError, ConfigError, InvalidRequestError

LOGIN_HINTS: dict[str, str] = {
    "azure": "run `az login` (or set AZURE_OPENAI_API_KEY, or AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_CLIENT_SECRET "
    "for a service principal)",
    "vertex": "run `gcloud auth application-default login` (or point GOOGLE_APPLICATION_CREDENTIALS at a "
    "service-account key file)",
}


class CloudCredentialsError(AuthenticationError):
    """The platform credential is missing, expired or refused; the message says how to log in."""

    def __init__(self, problem: str, *, provider: str, platform: str, status: int | None = None,
                 provider_code: str | None = None, request_id: str | None = None) -> None:
        super().__init__(f"{problem}; {LOGIN_HINTS[platform]}", provider=provider, status=status,
                         provider_code=provider_code, request_id=request_id)


class CloudExtraMissingError(ConfigError):
    """A cloud provider needs a package that is not installed; the message names the extra."""

    def __init__(self, provider: str, extra: str, package: str) -> None:
        self.extra = extra
        super().__init__(
            f"{provider} models need the {package!r} package for their credentials; "
            f"install it with: pip install 'metis-core[{extra}]'"
        )


class ModelNotEnabledError(InvalidRequestError):
    """The deployment or model does not exist, or is not enabled for this account, project or region."""


class ContentFilterBlockedError(InvalidRequestError):
    """The platform's content filter refused the prompt; `filter_results` says which category tripped."""

    def __init__(self, message: str, *, provider: str, status: int | None, filter_results: dict[str, Any],
                 provider_code: str | None = None, request_id: str | None = None) -> None:
        self.filter_results = filter_results
        super().__init__(message, provider=provider, status=status, provider_code=provider_code,
                         request_id=request_id)


def tripped_categories(results: Any) -> list[str]:
    """The category names a content_filter_result(s) object marks as filtered, in order."""
    if not isinstance(results, dict):
        return []
    return [name for name, verdict in results.items() if isinstance(verdict, dict) and verdict.get("filtered")]
