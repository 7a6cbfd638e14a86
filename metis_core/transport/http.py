"""The HTTP transport: sync calls on one pooled httpx Client, async calls on aiohttp (or a caller's httpx AsyncClient).

Sends prebuilt bytes, returns `WireResponse`s or raw byte streams, and maps transport failures
to `NetworkError` (`TruncatedStreamError` mid-body), raised outside the except block, so nothing
reachable from the error holds the request and its auth headers. Async calls go through aiohttp
sessions metis owns (transport/owned_async.py: a quarter of httpx's CPU per request) unless the
caller passed an httpx.AsyncClient; the async clients metis makes are one per event loop. It
knows nothing of providers, canonical messages or retries; asyncio cancellation propagates.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

import httpx

from metis_core.errors import NetworkError, TruncatedStreamError
from metis_core.transport.clients import MetisAsyncClient, MetisClient
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

    from metis_core.transport.owned_async import OwnedAsyncClient

DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=10.0, read=600.0, write=60.0, pool=10.0)
"""Connecting is quick or broken; a long generation may legitimately stay silent for minutes."""

DEFAULT_LIMITS: Final = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=60.0)

TimeoutArg = float | httpx.Timeout | None
AsyncHttp = Literal["aiohttp", "httpx"]
"""The library of the async client metis makes itself: aiohttp, a quarter of httpx's CPU per request
(for servers and long runs), or httpx, ~60 ms cheaper to start (for one-shot processes: the CLI)."""
URL_CACHE_SIZE: Final = 256
IN_PROCESS_TRANSPORTS: Final = (httpx.MockTransport, httpx.ASGITransport)
"""httpx transports with no connections of their own: a client over one serves any event loop."""


def _describe(exc: Exception) -> str:
    # The exception text only: never exc.request (it holds the auth headers).
    detail = str(exc) or "no detail"
    return f"{type(exc).__name__}: {detail[:200]}"


def network_error(exc: Exception, provider: str, *, mid_stream: bool = False, what: str | None = None) -> NetworkError:
    """Our error for a transport failure; the message says what to try next.

    `what` says how the request failed when the caller knows (aiohttp's failures); httpx's are
    classified here.
    """
    if mid_stream:
        return TruncatedStreamError(
            f"the connection dropped while the response was streaming ({_describe(exc)}); "
            "the partial answer is kept, retry the turn to get a full one",
            provider=provider,
        )
    if what is None:
        if isinstance(exc, httpx.TimeoutException):
            what = "timed out"
        elif isinstance(exc, httpx.ConnectError):
            what = "could not connect"
        else:
            what = "failed on the network"
    return NetworkError(
        f"request {what} ({_describe(exc)}); check the base URL and your connection, then retry",
        provider=provider,
    )


class ByteStream:
    """A streaming response: status and headers now, raw body chunks as they arrive (sync)."""

    __slots__ = ("_provider", "_response", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str], response: httpx.Response, provider: str) -> None:
        self.status = status
        self.headers = headers
        self._response = response
        self._provider = provider

    def iter_raw(self) -> Iterator[bytes]:
        if self._response.is_stream_consumed:  # a transport that handed over a body it already read
            yield self._response.content
            return
        failure: NetworkError | None = None
        try:
            yield from self._response.iter_raw()
        except httpx.TransportError as exc:
            failure = network_error(exc, self._provider, mid_stream=True)
        if failure is not None:
            raise failure  # outside the handler: no __context__ pointing at the request

    def read(self) -> WireResponse:
        """The whole body, for error responses that arrive on a streaming request."""
        failure: NetworkError | None = None
        try:
            body = self._response.read()
        except httpx.TransportError as exc:
            failure = network_error(exc, self._provider)
        if failure is not None:
            raise failure  # outside the handler: no __context__ pointing at the request
        return WireResponse(self.status, body, self.headers)


class AsyncByteStream:
    """A streaming response: status and headers now, raw body chunks as they arrive (async).

    One subclass per client library (httpx here, aiohttp in transport/owned_async.py) says how to
    read its body and which of its exceptions are transport failures; failures are mapped here.
    """

    __slots__ = ("_provider", "headers", "status")
    _failures: ClassVar[tuple[type[Exception], ...]] = ()

    def __init__(self, status: int, headers: Mapping[str, str], provider: str) -> None:
        self.status = status
        self.headers = headers
        self._provider = provider

    def _chunks(self) -> AsyncIterator[bytes]:
        raise NotImplementedError

    async def _body(self) -> bytes:
        raise NotImplementedError

    def _error(self, exc: Exception, *, mid_stream: bool) -> NetworkError:
        return network_error(exc, self._provider, mid_stream=mid_stream)

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's chunks as they arrive (transport/stream_bodies.py: an async generator, interpreted)."""
        from metis_core.transport.stream_bodies import raw_chunks  # streams only: a call never loads it

        return raw_chunks(self)

    async def release(self) -> None:
        """Hand the response back when its `astream` block ends (read to the end or not)."""
        raise NotImplementedError

    async def read(self) -> WireResponse:
        """The whole body, for error responses that arrive on a streaming request."""
        failure: NetworkError | None = None
        try:
            body = await self._body()
        except self._failures as exc:
            failure = self._error(exc, mid_stream=False)
        if failure is not None:
            raise failure  # outside the handler: no __context__ pointing at the request
        return WireResponse(self.status, body, self.headers)


class _HttpxAsyncByteStream(AsyncByteStream):
    """An httpx.AsyncClient's streaming response (a client the caller passed in)."""

    __slots__ = ("_response",)
    _failures: ClassVar[tuple[type[Exception], ...]] = (httpx.TransportError,)

    def __init__(self, response: httpx.Response, provider: str) -> None:
        super().__init__(response.status_code, response.headers, provider)
        self._response = response

    def _chunks(self) -> AsyncIterator[bytes]:
        from metis_core.transport.stream_bodies import httpx_chunks  # streams only: a call never loads it

        return httpx_chunks(self._response)

    async def _body(self) -> bytes:
        return await self._response.aread()

    async def release(self) -> None:
        await self._response.aclose()


class HttpTransport:
    """One pooled client per direction (sync, async), created lazily and reused for every call.

    Clients passed in are used as-is (their own timeout applies unless `timeout` is given) and
    are not closed by `close()`; clients created here use DEFAULT_TIMEOUT and are. Without an
    httpx.AsyncClient passed in, async calls go through metis's own aiohttp sessions, or through a
    `MetisAsyncClient` it creates when `async_http="httpx"`.
    """

    def __init__(
        self,
        client: httpx.Client | None = None,
        async_client: httpx.AsyncClient | None = None,
        *,
        timeout: TimeoutArg = None,
        async_http: AsyncHttp = "aiohttp",
    ) -> None:
        if async_http not in ("aiohttp", "httpx"):
            raise ValueError(f"async_http must be 'aiohttp' or 'httpx', not {async_http!r}")
        self._client = client
        self._owns_client = client is None
        self._async_client = async_client
        """The caller's httpx.AsyncClient (bound to the loop it is first used on; never closed here)."""
        self._made_async: dict[AbstractEventLoop, httpx.AsyncClient] = {}
        """`async_http="httpx"`: the client made for each event loop (httpx's pool belongs to one loop)."""
        self._made_async_lock = threading.Lock()
        self._async_http = async_http
        self._owned_async: OwnedAsyncClient | None = None
        self._timeout = timeout
        self._urls: dict[str, httpx.URL] = {}

    def __repr__(self) -> str:
        return f"HttpTransport(timeout={self._timeout!r})"

    # --- clients ---------------------------------------------------------------------------

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = MetisClient(timeout=DEFAULT_TIMEOUT, limits=DEFAULT_LIMITS)
        return self._client

    @property
    def async_client_bound_to_one_loop(self) -> bool:
        """Whether async calls go through a caller's httpx.AsyncClient that pools network connections:
        they belong to the event loop that opened them, so no other thread's loop may call async. A
        client over an in-process transport (httpx.MockTransport, httpx.ASGITransport) has none."""
        client = self._async_client
        if client is None:
            return False
        transport, mounts = getattr(client, "_transport", None), getattr(client, "_mounts", None)  # httpx's private
        if transport is None or not isinstance(mounts, dict):  # a client shaped otherwise: assume it pools
            return True
        return not all(t is None or isinstance(t, IN_PROCESS_TRANSPORTS) for t in (transport, *mounts.values()))

    def _httpx_async(self) -> httpx.AsyncClient | None:
        """The httpx client async calls use: the caller's, the running loop's one made here for
        `async_http="httpx"`, or None (aiohttp)."""
        if self._async_client is not None or self._async_http != "httpx":
            return self._async_client
        from asyncio import get_running_loop  # async paths only: a sync call does not load asyncio

        loop = get_running_loop()
        client = self._made_async.get(loop)  # read without the lock: only this loop's thread sets its entry
        if client is None:
            with self._made_async_lock:
                for gone in [other for other in self._made_async if other.is_closed()]:
                    del self._made_async[gone]  # its connections cannot be closed through a closed loop
                client = self._made_async[loop] = MetisAsyncClient(timeout=DEFAULT_TIMEOUT, limits=DEFAULT_LIMITS)
        return client

    @property
    def owned_async(self) -> OwnedAsyncClient:
        """The aiohttp-based client async calls use when no httpx.AsyncClient was passed in."""
        if self._owned_async is None:
            from metis_core.transport.owned_async import OwnedAsyncClient  # aiohttp loads on the first async call

            self._owned_async = OwnedAsyncClient()
        return self._owned_async

    def _parsed(self, url: str) -> httpx.URL:
        """The URL parsed once and reused: httpx would parse the same string on every call (~25 µs).

        `httpx.URL` is immutable, so sharing one between requests is safe; the cache is bounded
        (a client talks to a handful of endpoints; Gemini adds one per model).
        """
        parsed = self._urls.get(url)
        if parsed is None:
            if len(self._urls) >= URL_CACHE_SIZE:
                self._urls.clear()
            parsed = self._urls[url] = httpx.URL(url)
        return parsed

    def _request(
        self,
        client: httpx.Client | httpx.AsyncClient,
        method: str,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: TimeoutArg,
    ) -> httpx.Request:
        return client.build_request(method, self._parsed(url), content=body, headers=headers,
                                    timeout=self._timeout_arg(timeout))

    def _chosen(self, timeout: TimeoutArg) -> TimeoutArg:
        return timeout if timeout is not None else self._timeout

    def _timeout_arg(self, timeout: TimeoutArg) -> Any:
        chosen = self._chosen(timeout)
        return chosen if chosen is not None else httpx.USE_CLIENT_DEFAULT

    # --- sync ------------------------------------------------------------------------------

    def send(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        timeout: TimeoutArg = None,
        provider: str = "unknown",
    ) -> WireResponse:
        client = self.client
        request = self._request(client, method, url, body, headers, timeout)
        failure: NetworkError | None = None
        try:
            response = client.send(request)
        except httpx.TransportError as exc:
            failure = network_error(exc, provider)
        if failure is not None:
            raise failure  # outside the handler: no __context__ pointing at the request
        return WireResponse(response.status_code, response.content, response.headers)

    @contextmanager
    def stream(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        timeout: TimeoutArg = None,
        provider: str = "unknown",
    ) -> Iterator[ByteStream]:
        client = self.client
        request = self._request(client, method, url, body, headers, timeout)
        failure: NetworkError | None = None
        try:
            response = client.send(request, stream=True)
        except httpx.TransportError as exc:
            failure = network_error(exc, provider)
        if failure is not None:
            raise failure  # outside the handler: no __context__ pointing at the request
        try:
            yield ByteStream(response.status_code, response.headers, response, provider)
        finally:
            response.close()

    def close(self) -> None:
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None
        if self._owned_async is not None:
            self._owned_async.close()

    # --- async -----------------------------------------------------------------------------

    async def asend(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        timeout: TimeoutArg = None,
        provider: str = "unknown",
    ) -> WireResponse:
        owned = self._owned_async
        if owned is not None:  # the common case, read without the two lookups below (every async call)
            return await owned.send(method, url, body, headers, timeout if timeout is not None else self._timeout,
                                    provider)
        client = self._httpx_async()
        if client is None:
            return await self.owned_async.send(method, url, body, headers, self._chosen(timeout), provider)
        request = self._request(client, method, url, body, headers, timeout)
        failure: NetworkError | None = None
        try:
            response = await client.send(request)
        except httpx.TransportError as exc:
            failure = network_error(exc, provider)
        if failure is not None:
            raise failure  # outside the handler: no __context__ pointing at the request
        return WireResponse(response.status_code, response.content, response.headers)

    def astream(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        timeout: TimeoutArg = None,
        provider: str = "unknown",
    ) -> AbstractAsyncContextManager[AsyncByteStream]:
        """A streaming request: `async with` it for the response, released when the block ends."""
        from metis_core.transport.stream_bodies import opened_stream  # streams only: a call never loads it

        return opened_stream(self._open_stream(method, url, body, headers, timeout, provider))

    async def _open_stream(self, method: str, url: str, body: bytes, headers: Mapping[str, str],
                           timeout: TimeoutArg, provider: str) -> AsyncByteStream:
        client = self._httpx_async()
        if client is None:
            return await self.owned_async.open_stream(method, url, body, headers, self._chosen(timeout), provider)
        request = self._request(client, method, url, body, headers, timeout)
        failure: NetworkError | None = None
        try:
            response = await client.send(request, stream=True)
        except httpx.TransportError as exc:
            failure = network_error(exc, provider)
        if failure is not None:
            raise failure  # outside the handler: no __context__ pointing at the request
        return _HttpxAsyncByteStream(response, provider)

    async def aclose(self) -> None:
        from asyncio import get_running_loop

        if self._owned_async is not None:
            await self._owned_async.aclose()
        with self._made_async_lock:
            made = self._made_async.pop(get_running_loop(), None)
        if made is not None:
            await made.aclose()
