"""Who may use `metis serve`, and how much of the record each client may see.

A client presents a gateway key (`Authorization: Bearer`, `x-api-key`, or `?token=` on the
WebSocket, which a browser cannot give headers) checked by the gateway's own `KeyCheck` against the
configured backend's key store: scope `admin` sees `private` content, `viewer` sees
`user_controlled` and less, `model` is refused (403). On a loopback bind a request without a key is
the local user and sees everything. Static files carry no data and are always served.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from metis_core.errors import GatewayAuthError, GatewayError, ServeAccessKeyMissingError
from metis_core.events.envelope import Sensitivity
from metis_core.gateway.key_check import KeyCheck, presented_token
from metis_core.gateway.web_guard import refuse
from metis_core.server.launch_secret import LAUNCH_PATH, LaunchSecret
from metis_core.store.gateway_keys import KeyScope

SERVE_SCOPES: tuple[KeyScope, ...] = ("admin", "viewer")
CLEARANCE: dict[KeyScope, Sensitivity] = {"admin": Sensitivity.PRIVATE, "viewer": Sensitivity.USER_CONTROLLED}
NEEDED_FOR = "the web view, its JSON API and event stream"
ISSUE_HINT = "metis gateway keys issue --name web --scope admin"
OPEN_PATHS = ("/static/", "/favicon.ico")
METRICS_PATH = "/metrics"
"""Checked by its own route (an admin key or the metrics bearer), never opened by the launch cookie."""
LAUNCH_HINT = ("open the link `metis serve` printed when it started (it sets this browser's cookie for the "
               "local user), or send a gateway key as `Authorization: Bearer <key>`")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerAccess:
    """The key check (None: no key store, a loopback-only local server) and whether a request
    without a key is the trusted local user."""

    keys: KeyCheck | None = None
    loopback_bind: bool = True
    require_key: bool = False
    """Ask for a key on a loopback bind too (`metis serve --require-key`)."""
    launch: LaunchSecret = field(default_factory=LaunchSecret)
    """The cookie that makes a keyless loopback client the local user, and its one-time links."""

    def __post_init__(self) -> None:
        if self.keys is None and self.keys_required:
            raise ValueError("a server that requires keys needs a KeyCheck")

    @classmethod
    def for_bind(cls, host: str, keys: KeyCheck, *, require_key: bool = False) -> ServerAccess:
        """Refuses a non-loopback bind while no live admin or viewer key exists: the record would
        be open to the network, or closed to everybody."""
        loopback = is_loopback(host)
        if (require_key or not loopback) and not keys.keys.live_keys(SERVE_SCOPES):
            where = f"serving on {host}" if not loopback else "--require-key"
            raise ServeAccessKeyMissingError(
                f"{where} needs a gateway key with scope admin or viewer, and the database (METIS_HOME/metis.db "
                f"or METIS_DATABASE_URL) holds no live one: issue one with `{ISSUE_HINT}` (printed once; "
                "clients send it as `Authorization: Bearer <key>`), or bind to 127.0.0.1"
            )
        return cls(keys, loopback, require_key)

    @property
    def keys_required(self) -> bool:
        return self.require_key or not self.loopback_bind

    def clearance(self, token: str | None, cookie_header: str | None = None) -> Sensitivity:
        """The most private sensitivity this client may see. GatewayAuthError (401) for no key and no
        launch cookie, an unknown, revoked, expired or rotated-out key; GatewayScopeError (403) for a
        `model` key. A key that is sent is checked even beside the cookie."""
        local_user = not self.keys_required and self.launch.holds_cookie(cookie_header)
        if token is None and local_user:
            return Sensitivity.PRIVATE  # the local user's browser, or a client holding its cookie
        if token is None and not self.keys_required:
            raise GatewayAuthError(f"no key and no launch cookie: {LAUNCH_HINT}", reason="missing_token")
        if self.keys is None:
            if local_user:
                return Sensitivity.PRIVATE  # no key store: a presented key changes nothing
            raise GatewayAuthError(f"this server checks no keys: {LAUNCH_HINT}", reason="invalid_token")
        record = self.keys.check(token, "serve", SERVE_SCOPES, NEEDED_FOR)
        return CLEARANCE[record.scope]


def _token_from(scope: Scope) -> str | None:
    connection = HTTPConnection(scope)
    token = presented_token(connection)
    if token is None and scope["type"] == "websocket":
        token = connection.query_params.get("token") or None
    return token


class AccessMiddleware:
    """Sets `scope["state"]["clearance"]`, or answers 401 / 403 (on a WebSocket, at the handshake)."""

    def __init__(self, app: ASGIApp, access: ServerAccess) -> None:
        self.app, self.access = app, access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        state: dict[str, Any] = scope.setdefault("state", {})
        if scope["type"] == "http" and (path == "/" or path.startswith(OPEN_PATHS)):
            state["clearance"] = Sensitivity.AGGREGATABLE  # the page and its scripts hold no data
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http" and path == METRICS_PATH:
            state["clearance"] = Sensitivity.AGGREGATABLE
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http" and path == LAUNCH_PATH:
            await self._launch(scope, send)
            return
        try:
            cookie = HTTPConnection(scope).headers.get("cookie")
            state["clearance"] = self.access.clearance(_token_from(scope), cookie)
        except GatewayError as error:
            await refuse(scope, receive, send, error,
                         [(b"www-authenticate", b"Bearer")] if isinstance(error, GatewayAuthError) else [])
            return
        await self.app(scope, receive, send)

    async def _launch(self, scope: Scope, send: Send) -> None:
        """`GET /launch?token=`: a pending one-time token becomes the cookie, then `/`, a clean URL."""
        launch = self.access.launch
        token = HTTPConnection(scope).query_params.get("token")
        if scope.get("method") not in ("GET", "HEAD") or not launch.redeem(token):
            body = json.dumps({"error": "ServeAccessError", "detail": (
                "this link was already used or belongs to an earlier launch of `metis serve`: open the "
                "newest link it printed, or restart it")}).encode()
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        headers = [(b"location", b"/"), (b"set-cookie", launch.set_cookie_header()), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
