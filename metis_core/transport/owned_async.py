"""The async HTTP client metis owns: aiohttp sessions, one per running event loop.

A quarter of httpx's CPU per async request, on the gateway's hot path. It behaves as the httpx
client it replaced (timeouts, pool, certificates, env proxies, no redirects, cookies, no added
content type; docs/transport.md). A session whose loop has closed is shut; the table of sessions is
shared by every thread's loop under a lock; failures become `NetworkError`s with no cause attached.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import urllib.request
from collections.abc import AsyncIterator, Hashable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import ClassVar, Final

import aiohttp
import httpx
import yarl

from metis_core.errors import ConfigError, NetworkError
from metis_core.transport.http import (
    DEFAULT_LIMITS,
    DEFAULT_TIMEOUT,
    URL_CACHE_SIZE,
    AsyncByteStream,
    network_error,
)
from metis_core.transport.stream_bodies import opened_stream
from metis_core.transport.wire import WireResponse

CHUNK_BYTES: Final = 16 * 1024
"""The most a stream hands over at once. aiohttp hands over everything that has arrived; a burst
(a stream already complete upstream, replayed at once) would then be translated whole before its
first event goes on; httpx read 64 KiB at a time."""

_NO_CONTENT_TYPE: Final = ("Content-Type",)
"""Like httpx, no content type the caller did not give: skipped per request, only where the headers
lack one (given in the lower case metis's clients write it; any other spelling is skipped too, to no
effect). A session-wide skip made aiohttp copy and extend the headers on every request."""

_FAILURES: Final = (aiohttp.ClientError, TimeoutError)
"""What a request can raise besides cancellation: aiohttp's errors and its timeouts."""


def client_timeout(timeout: float | httpx.Timeout) -> aiohttp.ClientTimeout:
    """aiohttp's timeout for an httpx one: `connect` covers waiting for the pool and connecting."""
    if not isinstance(timeout, httpx.Timeout):
        timeout = httpx.Timeout(timeout)
    pool, connect = timeout.pool, timeout.connect
    acquire = None if pool is None or connect is None else pool + connect
    return aiohttp.ClientTimeout(total=None, connect=acquire, sock_connect=connect, sock_read=timeout.read)


def _failure(exc: Exception, provider: str, *, mid_stream: bool = False) -> NetworkError:
    if isinstance(exc, TimeoutError):
        what = "timed out"
    elif isinstance(exc, aiohttp.ClientConnectorCertificateError):
        what = ("could not connect: the server's certificate is not trusted "
                "(SSL_CERT_FILE or SSL_CERT_DIR name extra ones)")
    elif isinstance(exc, aiohttp.ClientConnectorError):
        what = "could not connect"
    else:
        what = "failed on the network"
    return network_error(exc, provider, mid_stream=mid_stream, what=what)


class AiohttpByteStream(AsyncByteStream):
    """An aiohttp streaming response: chunks as they arrive; a drop mid-body is a TruncatedStreamError."""

    __slots__ = ("_response",)
    _failures: ClassVar[tuple[type[Exception], ...]] = _FAILURES

    def __init__(self, response: aiohttp.ClientResponse, provider: str) -> None:
        super().__init__(response.status, response.headers, provider)
        self._response = response

    def _chunks(self) -> AsyncIterator[bytes]:
        return self._response.content.iter_chunked(CHUNK_BYTES)

    async def _body(self) -> bytes:
        return await self._response.read()

    def _error(self, exc: Exception, *, mid_stream: bool) -> NetworkError:
        return _failure(exc, self._provider, mid_stream=mid_stream)

    async def release(self) -> None:
        self._response.release()  # back to the pool when read to the end, closed otherwise


class OwnedAsyncClient:
    """metis's own async client: sends prebuilt bytes on the running loop's aiohttp session."""

    def __init__(self) -> None:
        self._sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}
        self._sessions_lock = threading.Lock()
        """Held to change `_sessions`: loops on other threads (a verifier's, a server's) share it."""
        self._ssl: ssl.SSLContext | None = None
        self._timeouts: dict[Hashable, aiohttp.ClientTimeout] = {}
        self._default_timeout = client_timeout(DEFAULT_TIMEOUT)
        self._proxies = urllib.request.getproxies()  # read once, as httpx does (aiohttp's trust_env: every call)
        self._targets: dict[str, tuple[yarl.URL, str | None]] = {}

    def _target(self, url: str) -> tuple[yarl.URL, str | None]:
        """The URL parsed, and the proxy from the environment it goes through (None: direct)."""
        target = self._targets.get(url)
        if target is None:
            if len(self._targets) >= URL_CACHE_SIZE:
                self._targets.clear()
            parsed = yarl.URL(url, encoded=True)  # as built: re-quoting would turn Bedrock's %3A into `:`
            proxy = self._proxies.get(parsed.scheme) or self._proxies.get("all")
            if proxy and parsed.host and urllib.request.proxy_bypass(parsed.host):
                proxy = None
            if proxy and yarl.URL(proxy).scheme not in ("http", "https"):
                raise ConfigError(  # the URL itself is not repeated: it may hold credentials
                    f"the environment names a {yarl.URL(proxy).scheme} proxy for {parsed.scheme} URLs; metis's "
                    "async client goes through http(s) proxies only: set HTTPS_PROXY / HTTP_PROXY to one, "
                    f"or add {parsed.host} to NO_PROXY")
            target = self._targets[url] = (parsed, proxy or None)
        return target

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(loop)  # read without the lock: only this loop's thread sets its entry
        if session is None or session.closed:
            self._shut_sessions_of_closed_loops()
            with self._sessions_lock:
                if self._ssl is None:
                    self._ssl = httpx.create_ssl_context()  # httpx's certificate store and SSL_CERT_* settings
                connector = aiohttp.TCPConnector(limit=DEFAULT_LIMITS.max_connections or 0, ssl=self._ssl,
                                                 keepalive_timeout=DEFAULT_LIMITS.keepalive_expiry or 0)
                session = self._sessions[loop] = aiohttp.ClientSession(
                    connector=connector, timeout=self._default_timeout,
                    cookie_jar=aiohttp.CookieJar(unsafe=True))  # like httpx: cookies from IP hosts too (local servers)
        return session

    def _shut_sessions_of_closed_loops(self) -> None:
        with self._sessions_lock:
            closed = [(loop, self._sessions.pop(loop)) for loop in list(self._sessions) if loop.is_closed()]
        for loop, session in closed:
            _shut(session, loop)

    def _timeout(self, timeout: float | httpx.Timeout | None) -> aiohttp.ClientTimeout:
        if timeout is None:
            return self._default_timeout
        key = (timeout.connect, timeout.read, timeout.pool) if isinstance(timeout, httpx.Timeout) else timeout
        chosen = self._timeouts.get(key)
        if chosen is None:
            if len(self._timeouts) >= 64:
                self._timeouts.clear()
            chosen = self._timeouts[key] = client_timeout(timeout)
        return chosen

    async def send(self, method: str, url: str, body: bytes, headers: Mapping[str, str],
                   timeout: float | httpx.Timeout | None, provider: str) -> WireResponse:
        failure: NetworkError | None = None
        target, proxy = self._target(url)
        try:  # read and released as the floor's `session.post` is, not through `async with` (two coroutines less)
            response = await self._session().request(
                method, target, data=body or None, headers=headers, proxy=proxy, allow_redirects=False,
                timeout=self._default_timeout if timeout is None else self._timeout(timeout),
                skip_auto_headers=None if "content-type" in headers else _NO_CONTENT_TYPE)
            try:
                content = await response.read()
            finally:
                response.release()  # back to the pool when read to the end, closed otherwise
        except _FAILURES as exc:
            failure = _failure(exc, provider)
        if failure is not None:
            raise failure  # outside the handler: no __context__ pointing at the request
        return WireResponse(response.status, content, response.headers)

    def stream(self, method: str, url: str, body: bytes, headers: Mapping[str, str],
               timeout: float | httpx.Timeout | None, provider: str) -> AbstractAsyncContextManager[AiohttpByteStream]:
        """A streaming request: `async with` it for the response, released when the block ends."""
        return opened_stream(self.open_stream(method, url, body, headers, timeout, provider))

    async def open_stream(self, method: str, url: str, body: bytes, headers: Mapping[str, str],
                          timeout: float | httpx.Timeout | None, provider: str) -> AiohttpByteStream:
        """The response of a streaming request, its body unread: the caller releases it (`stream` does)."""
        failure: NetworkError | None = None
        target, proxy = self._target(url)
        try:
            response = await self._session().request(
                method, target, data=body or None, headers=headers, proxy=proxy, timeout=self._timeout(timeout),
                allow_redirects=False, skip_auto_headers=None if "content-type" in headers else _NO_CONTENT_TYPE)
        except _FAILURES as exc:
            failure = _failure(exc, provider)
        if failure is not None:
            raise failure  # outside the handler: no __context__ pointing at the request
        return AiohttpByteStream(response, provider)

    async def aclose(self) -> None:
        """Close the running loop's session and shut those of closed loops."""
        self._shut_sessions_of_closed_loops()
        with self._sessions_lock:
            session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.close()

    def close(self) -> None:
        """Close every session from sync code (`HttpTransport.close`): at once where its loop is idle."""
        with self._sessions_lock:
            sessions, self._sessions = self._sessions, {}
        for loop, session in sessions.items():
            _shut(session, loop)


def _shut(session: aiohttp.ClientSession, loop: asyncio.AbstractEventLoop) -> None:
    """Close a session from outside its loop, as far as that loop's state allows."""
    if loop.is_closed():
        session.detach()  # its sockets cannot be closed through a closed loop; they close when collected
    elif loop.is_running():
        asyncio.run_coroutine_threadsafe(session.close(), loop)  # runs on its loop, soon
    else:
        loop.run_until_complete(session.close())
