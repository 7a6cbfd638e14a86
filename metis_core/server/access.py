"""Who may use `metis serve`, and how much of the record each client may see.

On a loopback bind with no token configured, the local user sees everything. Otherwise every API
and WebSocket request needs a token (`Authorization: Bearer`, or `?token=` for a browser's
WebSocket); tokens are kept only as SHA-256 hashes with a scope: `admin` sees `private` content,
`viewer` sees `user_controlled` and less. Static files carry no data and are always served.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from starlette.types import ASGIApp, Receive, Scope, Send

from metis_core.errors import ServeAccessError, ServeError
from metis_core.events.envelope import Sensitivity

TokenScope = Literal["admin", "viewer"]
TOKEN_ENV = "METIS_SERVE_TOKEN"
TOKEN_FILE = "serve-tokens.json"
CLEARANCE: dict[TokenScope, Sensitivity] = {"admin": Sensitivity.PRIVATE, "viewer": Sensitivity.USER_CONTROLLED}
OPEN_PATHS = ("/static/", "/favicon.ico")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_token_file(home: Path) -> dict[str, TokenScope]:
    """The hashed tokens in `<home>/serve-tokens.json` ({sha256: scope}); none if it is absent."""
    path = home / TOKEN_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ServeError(f"cannot read {path}: {error}; delete it and run `metis serve --new-token`") from None
    if not isinstance(data, dict) or any(v not in CLEARANCE for v in data.values()):
        raise ServeError(f"{path} must map token hashes to 'admin' or 'viewer'; delete it and create new tokens")
    return dict(data)


def create_token(home: Path, scope: TokenScope = "admin") -> str:
    """A new random token: its hash is added to the token file (mode 0600), the token returned once."""
    token = "mst_" + secrets.token_urlsafe(32)
    hashes = load_token_file(home)
    hashes[token_hash(token)] = scope
    path = home / TOKEN_FILE
    home.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(hashes, out, indent=2)
    return token


@dataclass(frozen=True)
class ServerAccess:
    """Token hashes and scopes, and whether a request without one is the trusted local user."""

    token_hashes: Mapping[str, TokenScope] = field(default_factory=dict)
    loopback_bind: bool = True

    @classmethod
    def for_bind(cls, host: str, token_hashes: Mapping[str, TokenScope]) -> ServerAccess:
        """Refuses a non-loopback bind without a token: the record would be open to the network."""
        loopback = is_loopback(host)
        if not loopback and not token_hashes:
            raise ServeError(
                f"serving on {host} exposes the whole record: give an access token with --token or "
                f"{TOKEN_ENV}, or create one with `metis serve --new-token`, or bind to 127.0.0.1"
            )
        return cls(dict(token_hashes), loopback)

    @property
    def tokens_required(self) -> bool:
        return bool(self.token_hashes) or not self.loopback_bind

    def clearance(self, token: str | None) -> Sensitivity:
        """The most private sensitivity this token may see; ServeAccessError if it may see nothing."""
        if token:
            digest = token_hash(token)
            for known, scope in self.token_hashes.items():
                if hmac.compare_digest(known, digest):
                    return CLEARANCE[scope]
            raise ServeAccessError(
                "the access token is not valid; ask the operator for one (`metis serve --new-token`)")
        if self.tokens_required:
            raise ServeAccessError("this server needs an access token: send `Authorization: Bearer <token>`")
        return Sensitivity.PRIVATE


def _token_from(scope: Scope) -> str | None:
    headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
    auth = headers.get(b"authorization", b"").decode("latin-1")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    query: str = scope.get("query_string", b"").decode("latin-1")
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name == "token" and value:
            return unquote(value)
    return None


class AccessMiddleware:
    """Sets `scope["state"]["clearance"]`, or answers 401 / closes the WebSocket with 4401."""

    def __init__(self, app: ASGIApp, access: ServerAccess) -> None:
        self.app, self.access = app, access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        open_path = scope["type"] == "http" and (path == "/" or path.startswith(OPEN_PATHS))
        try:
            clearance = self.access.clearance(_token_from(scope))
        except ServeAccessError as error:
            if not open_path:
                await _refuse(scope, receive, send, str(error))
                return
            clearance = Sensitivity.AGGREGATABLE
        state: dict[str, Any] = scope.setdefault("state", {})
        state["clearance"] = clearance
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send, message: str) -> None:
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.close", "code": 4401, "reason": "access token required or invalid"})
        return
    body = json.dumps({"error": "unauthorized", "detail": message}).encode()
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
    await send({"type": "http.response.body", "body": body})
