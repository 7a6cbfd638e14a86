"""Google Application Default Credentials for Vertex AI, through google-auth (imported on first use).

`google.auth.default()` finds the GOOGLE_APPLICATION_CREDENTIALS file (a service-account key,
signed into a JWT and traded at its token endpoint), gcloud's `application-default login`, or the
metadata server. Tokens are refreshed when they expire. A missing package or missing, expired or
revoked credentials are named errors saying what to run; a token never appears in one.
"""

from __future__ import annotations

import threading
from typing import Any

from metis_core.adapters.cloud_errors import CloudCredentialsError, CloudExtraMissingError
from metis_core.secret_scrub import remember_secret

SCOPE = "https://www.googleapis.com/auth/cloud-platform"


class GoogleTokenSource:
    """Access tokens (and the credential's project) for one provider, loaded on first use."""

    def __init__(self, provider: str, credentials: Any = None, project: str | None = None) -> None:
        self.provider = provider
        self._credentials = credentials
        self._project = project
        self._loaded = credentials is not None
        self._lock = threading.Lock()

    def _load(self) -> None:
        try:
            import google.auth
            import google.auth.exceptions
        except ImportError:
            raise CloudExtraMissingError(self.provider, "vertex", "google-auth") from None
        try:
            self._credentials, self._project = google.auth.default(scopes=[SCOPE])
        except google.auth.exceptions.DefaultCredentialsError as exc:
            raise CloudCredentialsError(
                f"no Google Application Default Credentials for {self.provider} ({type(exc).__name__})",
                provider=self.provider, platform="vertex") from None
        self._loaded = True

    def project(self) -> str | None:
        with self._lock:
            if not self._loaded:
                self._load()
            return self._project

    def token(self) -> str:
        with self._lock:
            if not self._loaded:
                self._load()
            credentials = self._credentials
            if not credentials.valid:
                self._refresh(credentials)
            token: str = credentials.token
        remember_secret(token)
        return token

    def _refresh(self, credentials: Any) -> None:
        try:
            from google.auth.transport.requests import Request
        except ImportError:
            raise CloudExtraMissingError(self.provider, "vertex", "google-auth[requests]") from None
        import google.auth.exceptions

        try:
            credentials.refresh(Request())
        except google.auth.exceptions.RefreshError as exc:
            raise CloudCredentialsError(
                f"the Google credentials for {self.provider} could not be refreshed (expired or revoked: "
                f"{type(exc).__name__})", provider=self.provider, platform="vertex") from None
        except google.auth.exceptions.TransportError as exc:
            raise CloudCredentialsError(
                f"the Google token endpoint could not be reached for {self.provider} ({type(exc).__name__})",
                provider=self.provider, platform="vertex") from None
