"""Azure credentials: the `api-key` header, or a Microsoft Entra ID bearer token via azure-identity.

With no key, `azure.identity.DefaultAzureCredential` (service principal variables, workload or
managed identity, `az login`) is imported on first use (`metis-core[azure]`) and its token kept
until five minutes before it expires. Failures are CloudCredentialsError naming how to log in;
neither the token nor the credential's own error text is ever put in a message.
"""

from __future__ import annotations

import importlib
import threading
import time
from typing import Any, Protocol

from metis_core.adapters.cloud_errors import CloudCredentialsError, CloudExtraMissingError
from metis_core.secret_scrub import remember_secret

SCOPE = "https://cognitiveservices.azure.com/.default"
REFRESH_MARGIN_SECONDS = 300


class TokenCredential(Protocol):
    """What azure-identity credentials offer (azure.core.credentials.TokenCredential)."""

    def get_token(self, *scopes: str, **kwargs: Any) -> Any: ...


def default_credential() -> TokenCredential:
    try:
        identity = importlib.import_module("azure.identity")  # optional: typed only by the Protocol above
    except ImportError:
        raise CloudExtraMissingError("azure", "azure", "azure-identity") from None
    credential: TokenCredential = identity.DefaultAzureCredential()
    return credential


class EntraTokenSource:
    """Bearer tokens for one provider, fetched on first use and refreshed before they expire."""

    def __init__(self, provider: str, credential: TokenCredential | None = None) -> None:
        self.provider = provider
        self._credential = credential
        self._token: str | None = None
        self._expires_on = 0.0
        self._lock = threading.Lock()

    def token(self) -> str:
        with self._lock:
            if self._token is None or time.time() >= self._expires_on - REFRESH_MARGIN_SECONDS:
                self._token, self._expires_on = self._fetch()
            return self._token

    def _fetch(self) -> tuple[str, float]:
        if self._credential is None:
            self._credential = default_credential()
        try:
            access = self._credential.get_token(SCOPE)
        except Exception as exc:  # azure-identity raises several types; only the type name is safe to show
            raise CloudCredentialsError(
                f"no Microsoft Entra ID token for {self.provider} ({type(exc).__name__})",
                provider=self.provider, platform="azure",
            ) from None
        token = getattr(access, "token", None)
        if not isinstance(token, str) or not token:
            raise CloudCredentialsError(f"the Entra ID credential returned no token for {self.provider}",
                                        provider=self.provider, platform="azure")
        remember_secret(token)
        return token, float(getattr(access, "expires_on", 0) or 0)


def azure_auth_headers(api_key: str | None, tokens: EntraTokenSource) -> dict[str, str]:
    if api_key:
        return {"api-key": api_key}
    return {"Authorization": f"Bearer {tokens.token()}"}
