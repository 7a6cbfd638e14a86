"""`WebGuard`: the checks a local HTTP server needs against the browser, before any route runs.

Host allow-list (DNS rebinding: 421), Origin check on every state-changing request and WebSocket
handshake (cross-site pages: 403), `application/json` on JSON API writes (CORS-simple bodies: 415),
and the security headers on every answer. Used by the gateway and by `metis serve`; it checks no
key (each server's own access check does) and reads no body.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from metis_core.errors import MetisError, ServeContentTypeError, ServeError, ServeHostError, ServeOriginError

ALLOWED_HOSTS_ENV: Final = "METIS_ALLOWED_HOSTS"
ALLOWED_ORIGINS_ENV: Final = "METIS_ALLOWED_ORIGINS"
LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "[::1]"})
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
JSON_WRITES: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SECURITY_HEADERS: Final = (
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: "
                                 b"https:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                                 b"form-action 'self'; frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
NO_STORE: Final = (b"cache-control", b"no-store")


def _split(raw: str | None) -> tuple[str, ...]:
    return tuple(part.strip().lower() for part in (raw or "").split(",") if part.strip())


@dataclass(frozen=True)
class WebPolicy:
    """What the guard lets through besides the server's own address and loopback names.

    `allowed_hosts` entries are `name` (any port) or `name:port`; `allowed_origins` are full origins
    (`https://metis.example`); `json_prefixes` are the paths whose writes must be `application/json`
    (`metis serve`'s API: the gateway's `/v1` routes need a key in a header, which no page of another
    site can send, and check it before reading a body);
    `cacheable_prefixes` the paths whose answers may be cached (static files)."""

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    json_prefixes: tuple[str, ...] = ("/api/",)
    cacheable_prefixes: tuple[str, ...] = ("/static/",)

    @classmethod
    def from_env(cls, **kwargs: tuple[str, ...]) -> WebPolicy:
        """METIS_ALLOWED_HOSTS and METIS_ALLOWED_ORIGINS (comma-separated), as `metis gateway serve`
        hands its `--allowed-host` / `--allowed-origin` and config to its workers."""
        return cls(_split(os.environ.get(ALLOWED_HOSTS_ENV)), _split(os.environ.get(ALLOWED_ORIGINS_ENV)), **kwargs)

    def with_names(self, hosts: Iterable[str], origins: Iterable[str]) -> WebPolicy:
        return WebPolicy(tuple(dict.fromkeys([*self.allowed_hosts, *(h.strip().lower() for h in hosts)])),
                         tuple(dict.fromkeys([*self.allowed_origins, *(o.strip().lower().rstrip("/")
                                                                       for o in origins)])),
                         self.json_prefixes, self.cacheable_prefixes)

    def host_allowed(self, host: str, server: tuple[str, int | None] | None) -> bool:
        """Whether a Host header names this server: a loopback name or the listening address, on the
        listening port; or a configured name."""
        name, port = _split_host(host)
        if host in self.allowed_hosts or name in self.allowed_hosts:
            return True
        if server is None:
            return name in LOOPBACK_NAMES
        local_address, local_port = server
        if local_port is not None and (port or 80) != local_port:
            return False
        # the listening address itself: an IP literal, which no rebinding name can be (an ASGI server
        # handed a name here, as in-process test transports are, answers to that name)
        return name in LOOPBACK_NAMES or name == local_address or _same_address(name, local_address)

    def origin_allowed(self, origin: str, scheme: str, host: str) -> bool:
        own = ("https" if scheme in ("https", "wss") else "http") + "://" + host
        return origin == own or origin in self.allowed_origins


def _split_host(host: str) -> tuple[str, int | None]:
    name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not name or not port.isdigit():
        return host, None
    return name, int(port)


def _same_address(name: str, address: str) -> bool:
    try:
        return ipaddress.ip_address(name.strip("[]")) == ipaddress.ip_address(address)
    except ValueError:
        return False


class WebGuard:
    """ASGI wrapper: refuses a foreign Host, a foreign Origin on a write or WebSocket, a non-JSON
    API write; adds the security headers (and `no-store` outside the cacheable paths) to every answer."""

    def __init__(self, app: ASGIApp | None, policy: WebPolicy | None = None) -> None:
        self.app, self.policy = app, policy or WebPolicy()
        self._hosts_seen: dict[tuple[bytes | None, object], bool] = {}
        """(Host header, listening address) -> allowed: a server sees few distinct pairs."""

    def _host_allowed(self, raw_host: bytes | None, server: tuple[str, int | None] | None) -> bool:
        key = (raw_host, server)
        found = self._hosts_seen.get(key)
        if found is None:
            found = raw_host is not None and self.policy.host_allowed(raw_host.decode("latin-1").strip().lower(),
                                                                     server)
            if len(self._hosts_seen) >= 1024:  # a client cycling names cannot grow it without bound
                self._hosts_seen.clear()
            self._hosts_seen[key] = found
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.app is not None, "a WebGuard without an app runs one through `guarded`"
        await self.guarded(self.app, scope, receive, send)

    async def guarded(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """Run `app` behind the checks (the gateway passes its dispatch here on each call)."""
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            await app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await refuse(scope, receive, send, refusal)
            return
        if kind == "websocket":
            await app(scope, receive, send)
            return
        cacheable = scope["path"].startswith(self.policy.cacheable_prefixes)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = with_security_headers(message.get("headers", []), cacheable)
            await send(message)

        await app(scope, receive, send_with_headers)

    def refusal(self, scope: Scope) -> ServeError | None:
        raw_host = origin = content_type = None
        for name, value in scope["headers"]:
            if name == b"host":
                raw_host = value
            elif name == b"origin":
                origin = value.decode("latin-1").strip().lower()
            elif name == b"content-type":
                content_type = value.decode("latin-1")
        host = raw_host.decode("latin-1").strip().lower() if raw_host is not None else None
        if host is None or not self._host_allowed(raw_host, scope.get("server")):
            return ServeHostError(
                f"this server does not answer to Host {host or '(none)'!r}: use the address it listens on or "
                "localhost, or let the operator allow the name (`--allowed-host NAME`, config `serve.allowed_hosts`)")
        method = scope.get("method", "GET")
        writes = scope["type"] == "websocket" or method not in SAFE_METHODS
        if origin is not None and writes and not self.policy.origin_allowed(origin, scope.get("scheme", "http"), host):
            return ServeOriginError(
                f"requests from the page at {origin!r} are refused: only this server's own pages may change "
                "state or open the event stream (an operator may allow an origin with `--allowed-origin`)")
        if method in JSON_WRITES and scope["path"].startswith(self.policy.json_prefixes):
            media = (content_type or "").split(";", 1)[0].strip().lower()
            if media != "application/json":
                return ServeContentTypeError(
                    f"the body must be JSON sent as `Content-Type: application/json`, not {media or 'none'!r}")
        return None


def with_security_headers(headers: Iterable[tuple[bytes, bytes]], cacheable: bool) -> list[tuple[bytes, bytes]]:
    """The answer's headers plus the security headers it does not set itself (names are lower case,
    as ASGI servers and Starlette's responses give them)."""
    out = list(headers)
    has_policy = has_cache = False
    for name, _ in out:
        if name == b"content-security-policy":
            has_policy = True
        elif name == b"cache-control":
            has_cache = True
    if not has_policy:
        out.extend(SECURITY_HEADERS)
    if not cacheable and not has_cache:
        out.append(NO_STORE)
    return out


async def refuse(scope: Scope, receive: Receive, send: Send, error: MetisError,
                 extra_headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    """Answer `error` as JSON with its status; at a WebSocket handshake, as an HTTP answer when the
    server can send one, else a close with code 4000 + status."""
    body = json.dumps({"error": type(error).__name__, "detail": str(error)}).encode()
    headers = with_security_headers([(b"content-type", b"application/json"), *extra_headers], cacheable=False)
    status: int = getattr(error, "status", 400)
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        if "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 4000 + status, "reason": type(error).__name__})
            return
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
        return
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
