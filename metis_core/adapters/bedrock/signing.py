"""AWS credentials and SigV4 signing for Bedrock, done by botocore (the `metis-core[bedrock]` extra).

botocore is imported here, when the first Bedrock request is signed, never when metis_core is
imported. Credentials come from botocore's standard chain: environment, shared config and
credentials files with profiles, SSO and assumed-role sessions, container and instance roles;
refreshable ones are refreshed by botocore. A bearer Bedrock API key needs neither signing nor
botocore. Every credential part is remembered as a secret so no error or event can show it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from metis_core.adapters.bedrock.errors import PROVIDER, BedrockCredentialsError
from metis_core.errors import ConfigError
from metis_core.secret_scrub import remember_secret

SERVICE = "bedrock"
"""The SigV4 signing name of bedrock-runtime."""

_REGION_IN_HOST = re.compile(r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com", re.IGNORECASE)


class BedrockExtraMissingError(ConfigError):
    """botocore is not installed, and a Bedrock call without a bearer API key needs it."""


class BedrockRegionError(ConfigError):
    """No AWS region could be found for a Bedrock call."""


def require_botocore() -> ModuleType:
    """botocore, or a BedrockExtraMissingError that names the extra to install."""
    try:
        import botocore
    except ImportError:
        raise BedrockExtraMissingError(
            "AWS Bedrock needs botocore for SigV4 signing and the ConverseStream event stream: "
            "pip install 'metis-core[bedrock]' (or set AWS_BEARER_TOKEN_BEDROCK for non-streaming calls "
            "with a Bedrock API key)"
        ) from None
    module: ModuleType = botocore
    return module


def region_from_host(url: str) -> str | None:
    """`us-west-2` from `https://bedrock-runtime.us-west-2.amazonaws.com/...`, else None."""
    host = url.split("://", 1)[-1]
    found = _REGION_IN_HOST.match(host)
    return found.group(1).lower() if found else None


def _credentials_failure(exc: Exception) -> BedrockCredentialsError:
    return BedrockCredentialsError(
        f"AWS credentials could not be loaded ({type(exc).__name__}: {exc}); refresh them (e.g. `aws sso login`, "
        "a new session token, AWS_PROFILE) or set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key",
        provider=PROVIDER,
    )


class SigV4Signer:
    """Signs Bedrock requests with the standard AWS credential chain (one botocore session per signer)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ if environ is not None else os.environ
        self._session: Any = None
        self._credentials: Any = None
        self._lock = threading.Lock()

    def region(self, url: str) -> str:
        """The region to sign for: the endpoint's own, else AWS_REGION / AWS_DEFAULT_REGION, else the profile's."""
        found = region_from_host(url) or self._environ.get("AWS_REGION") or self._environ.get("AWS_DEFAULT_REGION")
        if not found:
            found = self._botocore_session().get_config_variable("region")
        if not found:
            raise BedrockRegionError(
                "no AWS region for Bedrock: set AWS_REGION (or a region in your AWS profile), "
                "or METIS_BEDROCK_BASE_URL to https://bedrock-runtime.<region>.amazonaws.com"
            )
        return str(found)

    def _botocore_session(self) -> Any:
        if self._session is None:
            require_botocore()
            import botocore.session

            self._session = botocore.session.Session()
        return self._session

    def frozen_credentials(self) -> Any:
        """Current credentials from the chain (refreshed by botocore when they are refreshable)."""
        require_botocore()  # before any botocore import below: a missing package is named with its extra
        with self._lock:
            if self._credentials is None:
                from botocore.exceptions import BotoCoreError

                try:
                    self._credentials = self._botocore_session().get_credentials()
                except BotoCoreError as exc:
                    raise _credentials_failure(exc) from None
            if self._credentials is None:
                raise BedrockCredentialsError(
                    "no AWS credentials found for Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                    "AWS_PROFILE (shared config/credentials files, SSO), run on a role (container or instance), "
                    "or set AWS_BEARER_TOKEN_BEDROCK to a Bedrock API key",
                    provider=PROVIDER,
                )
            from botocore.exceptions import BotoCoreError

            try:
                frozen = self._credentials.get_frozen_credentials()
            except BotoCoreError as exc:
                raise _credentials_failure(exc) from None
        for part in (frozen.access_key, frozen.secret_key, frozen.token):
            remember_secret(part)
        return frozen

    def sign(self, method: str, url: str, body: bytes, headers: Mapping[str, str]) -> dict[str, str]:
        """`headers` plus X-Amz-Date, X-Amz-Security-Token (session credentials) and Authorization."""
        region = self.region(url)
        frozen = self.frozen_credentials()
        return sign_with(frozen, region, method, url, body, headers)


class _NoSigningTrace(logging.Filter):
    """Drops botocore.auth's DEBUG lines: its canonical request holds the session token."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG


_SIGNING_TRACE = _NoSigningTrace()


def sign_with(credentials: Any, region: str, method: str, url: str, body: bytes,
              headers: Mapping[str, str], service: str = SERVICE) -> dict[str, str]:
    """SigV4 by botocore's signer for given credentials (what `SigV4Signer.sign` and the test vectors call)."""
    require_botocore()
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    auth_log = logging.getLogger("botocore.auth")
    if _SIGNING_TRACE not in auth_log.filters:
        auth_log.addFilter(_SIGNING_TRACE)

    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
    SigV4Auth(credentials, service, region).add_auth(request)
    return {name: str(value) for name, value in request.headers.items()}
