"""Checking a presented gateway key at a door: the gateway's `/v1` routes or `metis serve`.

One path for both doors, so the constant-time comparison, expiry, revocation and rotation grace
(`KeyService.authenticate`), the scope check and the rate-limited `gateway.auth_failed` event are
the same everywhere. It reads the key from the request and answers with the key's row or a
GatewayAuthError (401) / GatewayScopeError (403); it never decides what the door then allows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Final, Literal

from starlette.requests import HTTPConnection

from metis_core.errors import GatewayAuthError, GatewayScopeError
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor
from metis_core.gateway.keys import KeyService, token_hash_prefix
from metis_core.store.gateway_keys import GatewayKeyRecord, KeyScope

Door = Literal["openai", "anthropic", "serve"]
"""Where a key was presented: an inbound shape of the gateway, or `metis serve`."""

MODEL_SCOPES: Final[tuple[KeyScope, ...]] = ("model", "admin")
"""Scopes that may call models through the gateway's `/v1` routes (the first is the one to issue)."""


def presented_token(connection: HTTPConnection) -> str | None:
    """The key in `Authorization: Bearer <key>` or `x-api-key`; None when neither holds one (a
    `Basic` or empty Authorization header counts as none, so it is refused as `missing_token`)."""
    return token_in_headers(connection.scope["headers"])


def token_in_headers(raw: Iterable[tuple[bytes, bytes]]) -> str | None:
    """`presented_token` read from the ASGI scope's headers in one pass, as Starlette's `Headers.get`
    reads each: names compared as sent (ASGI servers send them lowercase), the first of a repeated
    header taken, values decoded as latin-1. Two `Headers.get` calls were two passes (every call)."""
    auth: bytes | None = None
    api_key: bytes | None = None
    for name, value in raw:
        if name == b"authorization":
            if auth is None:
                auth = value
        elif name == b"x-api-key" and api_key is None:
            api_key = value
    if auth and auth[:7].lower() == b"bearer ":
        return auth[7:].decode("latin-1").strip() or None
    return (api_key.decode("latin-1") or None) if api_key is not None else None


class AuthFailureLimiter:
    """A fixed one-minute window: the first N failures are recorded, the rest only counted."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self.window = -1
        self.recorded = 0
        self.suppressed = 0
        self._lock = threading.Lock()

    def allow(self) -> bool:
        with self._lock:
            window = int(time.monotonic() // 60)
            if window != self.window:
                self.window, self.recorded = window, 0
            if self.recorded < self.per_minute:
                self.recorded += 1
                return True
            self.suppressed += 1
            return False


class KeyCheck:
    """A KeyService's `authenticate`, plus the scope a door needs and the audit of every refusal."""

    def __init__(self, keys: KeyService, *, failure_events_per_minute: int = 10) -> None:
        self.keys = keys
        self.failures = AuthFailureLimiter(failure_events_per_minute)

    def check(self, token: str | None, door: Door, scopes: tuple[KeyScope, ...], needed_for: str) -> GatewayKeyRecord:
        """The key's row when `token` is a live key with one of `scopes` (the first is the one the 403
        message tells the operator to issue); `needed_for` names the use ("the web view and its API")."""
        try:
            record = self.keys.authenticate(token)
            if record.scope not in scopes:
                raise GatewayScopeError(
                    f"this key has scope {record.scope!r}; {needed_for} needs a key with scope "
                    f"{' or '.join(scopes)} (the operator issues one with "
                    f"`metis gateway keys issue --scope {scopes[0]}`)",
                    key_id=record.id,
                )
            return record
        except (GatewayAuthError, GatewayScopeError) as error:
            if self.failures.allow():
                self.keys.bus.emit_new("gateway.auth_failed", {
                    "reason": error.reason, "inbound_shape": door,
                    "token_hash_prefix": token_hash_prefix(token) if token else None,
                    "gateway_key_id": error.key_id,
                }, session_id=SYSTEM_SESSION_ID, actor=Actor.SYSTEM)  # fmt: skip
            raise
