"""The transport seam for cassettes: record real HTTP exchanges, or serve recorded ones instead.

`CassetteTransport.bind(canonical)` gives the object ModelClient sends one call through, with the
same methods as `HttpTransport` (send, stream, asend, astream). Recording passes every byte
through untouched and writes the scrubbed exchange when the call finishes; replaying never opens
a connection and hands the adapter the recorded status, headers and raw chunks, so the real
framing and stream parsing run. Transport failures are recorded and raised again on replay.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from metis_core.cassettes.canonical import request_key
from metis_core.cassettes.cassette import Cassette
from metis_core.cassettes.format import CassetteEntry, RecordedResponse
from metis_core.errors import NetworkError, TruncatedStreamError
from metis_core.transport.http import AsyncByteStream, ByteStream, HttpTransport
from metis_core.transport.wire import WireResponse


class _Exchange:
    """One call being recorded: the request now, the response as it arrives, written once at the end."""

    def __init__(self, cassette: Cassette, canonical: dict[str, Any], method: str, url: str, body: bytes,
                 headers: Mapping[str, str], stream: bool) -> None:
        self.cassette = cassette
        self.canonical = canonical
        self.method, self.url, self.body, self.headers, self.stream = method, url, body, headers, stream
        self.started = time.perf_counter()
        self.opened = self.started
        self.status = 0
        self.response_headers: dict[str, str] = {}
        self.chunks: list[tuple[float, bytes]] | None = None
        self.response_body: bytes | None = None
        self.error: str | None = None
        self.written = False

    def opened_with(self, status: int, headers: Mapping[str, str]) -> None:
        self.opened = time.perf_counter()
        self.status = status
        self.response_headers = dict(headers)

    def chunk(self, data: bytes) -> None:
        if self.chunks is None:
            self.chunks = []
        self.chunks.append(((time.perf_counter() - self.opened) * 1000, data))

    def finish(self) -> None:
        if self.written:
            return
        self.written = True
        scrub = self.cassette.scrubber
        response = RecordedResponse(
            status=self.status, headers=scrub.headers_of(self.response_headers),
            body=scrub.body(self.response_body) if self.response_body is not None else None,
            chunks=scrub.chunks(self.chunks) if self.chunks is not None else None,
            error=scrub.text(self.error) if self.error is not None else None,
        )
        if response.chunks is None and response.body is None and self.stream and self.error is None:
            response.chunks = []  # a stream that delivered nothing before it was closed
        self.cassette.append(CassetteEntry(
            key=request_key(self.canonical), canonical=scrub.json(self.canonical), method=self.method,
            url=scrub.url(self.url),
            request_headers=scrub.headers_of(self.headers), request_body=scrub.body(self.body),
            response=response, stream=self.stream, duration_ms=(time.perf_counter() - self.started) * 1000,
        ))


class _RecordingStream:
    """Wraps an open byte stream: every raw chunk (or the read body) is passed on and noted."""

    def __init__(self, wire: ByteStream | AsyncByteStream, exchange: _Exchange) -> None:
        self.status = wire.status
        self.headers = wire.headers
        self._wire = wire
        self._exchange = exchange
        exchange.opened_with(wire.status, wire.headers)

    def iter_raw(self) -> Iterator[bytes]:
        assert isinstance(self._wire, ByteStream)
        try:
            for data in self._wire.iter_raw():
                self._exchange.chunk(data)
                yield data
        except NetworkError as error:
            self._exchange.error = str(error)
            raise

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        assert isinstance(self._wire, AsyncByteStream)
        try:
            async for data in self._wire.aiter_raw():
                self._exchange.chunk(data)
                yield data
        except NetworkError as error:
            self._exchange.error = str(error)
            raise

    def read(self) -> WireResponse:
        assert isinstance(self._wire, ByteStream)
        response = self._wire.read()
        self._exchange.response_body = response.body
        return response

    async def aread(self) -> WireResponse:
        assert isinstance(self._wire, AsyncByteStream)
        response = await self._wire.read()
        self._exchange.response_body = response.body
        return response


class _AsyncRecordingStream(_RecordingStream):
    async def read(self) -> WireResponse:  # type: ignore[override]
        return await self.aread()


class ReplayedStream:
    """A recorded streaming response: status and headers, then the recorded raw chunks (sync or async)."""

    def __init__(self, response: RecordedResponse, provider: str) -> None:
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers
        self._response = response
        self._provider = provider

    def _pieces(self) -> list[bytes]:
        if self._response.chunks is not None:
            return [data for _, data in self._response.chunks]
        return [self._response.body] if self._response.body else []

    def _failure(self) -> TruncatedStreamError | None:
        if self._response.error is None:
            return None
        return TruncatedStreamError(f"(replayed) {self._response.error}", provider=self._provider)

    def iter_raw(self) -> Iterator[bytes]:
        yield from self._pieces()
        failure = self._failure()
        if failure is not None:
            raise failure

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        for data in self._pieces():
            yield data
        failure = self._failure()
        if failure is not None:
            raise failure

    def read(self) -> WireResponse:
        return WireResponse(self.status, self._response.stream_body, self.headers)


class _AsyncReplayedStream(ReplayedStream):
    async def read(self) -> WireResponse:  # type: ignore[override]
        return WireResponse(self.status, self._response.stream_body, self.headers)


def _replayed_response(entry: CassetteEntry, provider: str) -> WireResponse:
    recorded = entry.response
    if recorded.status == 0:
        raise NetworkError(f"(replayed) {recorded.error or 'the recorded request failed'}", provider=provider)
    return WireResponse(recorded.status, recorded.stream_body, recorded.headers)


class CassetteTransport:
    """An `HttpTransport` plus a cassette; `bind` one canonical request per call."""

    def __init__(self, inner: HttpTransport, cassette: Cassette) -> None:
        self.inner = inner
        self.cassette = cassette

    def bind(self, canonical: dict[str, Any]) -> CassetteCall:
        return CassetteCall(self, canonical)


class CassetteCall:
    """The transport methods ModelClient uses, for one call whose canonical request is known."""

    __slots__ = ("_canonical", "_owner")

    def __init__(self, owner: CassetteTransport, canonical: dict[str, Any]) -> None:
        self._owner = owner
        self._canonical = canonical

    def _exchange(self, method: str, url: str, body: bytes, headers: Mapping[str, str], stream: bool) -> _Exchange:
        return _Exchange(self._owner.cassette, self._canonical, method, url, body, headers, stream)

    # --- sync ------------------------------------------------------------------------------

    def send(self, method: str, url: str, body: bytes, headers: Mapping[str, str], *, provider: str) -> WireResponse:
        cassette = self._owner.cassette
        if not cassette.recording:
            return _replayed_response(cassette.take(self._canonical), provider)
        exchange = self._exchange(method, url, body, headers, False)
        try:
            response = self._owner.inner.send(method, url, body, headers, provider=provider)
        except NetworkError as error:
            exchange.error = str(error)
            exchange.finish()
            raise
        return _recorded(exchange, response)

    def _replayed_stream(self, provider: str) -> RecordedResponse:
        """The recorded response a replayed stream serves; a recorded connection failure is raised again."""
        entry = self._owner.cassette.take(self._canonical)
        if entry.response.status == 0:
            _replayed_response(entry, provider)
        return entry.response

    @contextmanager
    def stream(self, method: str, url: str, body: bytes, headers: Mapping[str, str], *,
               provider: str) -> Iterator[ByteStream]:
        if not self._owner.cassette.recording:
            yield ReplayedStream(self._replayed_stream(provider), provider)  # type: ignore[misc]
            return
        exchange = self._exchange(method, url, body, headers, True)
        try:
            with self._owner.inner.stream(method, url, body, headers, provider=provider) as wire:
                yield _RecordingStream(wire, exchange)  # type: ignore[misc]
        except NetworkError as error:
            exchange.error = exchange.error or str(error)
            raise
        finally:
            exchange.finish()

    # --- async -----------------------------------------------------------------------------

    async def asend(self, method: str, url: str, body: bytes, headers: Mapping[str, str], *,
                    provider: str) -> WireResponse:
        cassette = self._owner.cassette
        if not cassette.recording:
            return _replayed_response(cassette.take(self._canonical), provider)
        exchange = self._exchange(method, url, body, headers, False)
        try:
            response = await self._owner.inner.asend(method, url, body, headers, provider=provider)
        except NetworkError as error:
            exchange.error = str(error)
            exchange.finish()
            raise
        return _recorded(exchange, response)

    @asynccontextmanager
    async def astream(self, method: str, url: str, body: bytes, headers: Mapping[str, str], *,
                      provider: str) -> AsyncIterator[AsyncByteStream]:
        if not self._owner.cassette.recording:
            yield _AsyncReplayedStream(self._replayed_stream(provider), provider)  # type: ignore[misc]
            return
        exchange = self._exchange(method, url, body, headers, True)
        try:
            async with self._owner.inner.astream(method, url, body, headers, provider=provider) as wire:
                yield _AsyncRecordingStream(wire, exchange)  # type: ignore[misc]
        except NetworkError as error:
            exchange.error = exchange.error or str(error)
            raise
        finally:
            exchange.finish()


def _recorded(exchange: _Exchange, response: WireResponse) -> WireResponse:
    """Write a whole (non-streamed) response into its exchange and hand it on unchanged."""
    exchange.opened_with(response.status, response.headers)
    exchange.response_body = response.body
    exchange.finish()
    return response
