"""HttpTransport: bytes in, WireResponse or raw chunks out; httpx failures become NetworkError."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from metis_core.errors import NetworkError, TruncatedStreamError
from metis_core.transport.http import DEFAULT_TIMEOUT, HttpTransport

SECRET = "sk-ant-SECRET-never-shown"


def test_send_posts_the_exact_body_and_headers_and_returns_status_body_headers() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, content=b'{"ok":true}', headers={"request-id": "req_1"})

    transport = HttpTransport(httpx.Client(transport=httpx.MockTransport(handler)))
    response = transport.send("POST", "http://h/v1/x", b'{"a":1}', {"x-api-key": SECRET}, provider="anthropic")
    assert (response.status, response.body, response.headers["Request-Id"]) == (201, b'{"ok":true}', "req_1")
    assert seen[0].content == b'{"a":1}'
    assert seen[0].headers["x-api-key"] == SECRET


@pytest.mark.parametrize(
    "failure",
    [httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), httpx.RemoteProtocolError("bad"), httpx.ReadError("x")],
)
def test_transport_failures_become_network_errors_without_the_key(failure: httpx.TransportError) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise failure

    transport = HttpTransport(httpx.Client(transport=httpx.MockTransport(handler)))
    with pytest.raises(NetworkError) as raised:
        transport.send("POST", "http://h/v1/x", b"{}", {"x-api-key": SECRET}, provider="anthropic")
    error = raised.value
    assert error.retryable and error.provider == "anthropic"
    assert type(failure).__name__ in str(error)
    assert SECRET not in str(error) and SECRET not in repr(error)
    assert error.__cause__ is None and error.__context__ is None  # the httpx request (with headers) is not kept


def test_stream_yields_raw_chunks_and_a_drop_mid_body_is_a_truncated_stream_error() -> None:
    def body() -> Iterator[bytes]:
        yield b"event: a\n"
        yield b"data: 1\n\n"
        raise httpx.ReadError("connection reset")

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=_SyncStream(body()))

    transport = HttpTransport(httpx.Client(transport=httpx.MockTransport(handler)))
    got: list[bytes] = []
    with transport.stream("POST", "http://h/s", b"{}", {}, provider="anthropic") as wire:
        assert wire.status == 200
        with pytest.raises(TruncatedStreamError) as raised:
            for chunk in wire.iter_raw():
                got.append(chunk)
    assert b"".join(got) == b"event: a\ndata: 1\n\n"
    assert "partial answer is kept" in str(raised.value)


class _SyncStream(httpx.SyncByteStream):
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes], fail: bool) -> None:
        self._chunks = chunks
        self._fail = fail

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk
        if self._fail:
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


async def test_async_send_and_stream() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/s":
            return httpx.Response(200, stream=_AsyncStream([b"a", b"b"], fail=True))
        return httpx.Response(429, content=b"{}", headers={"retry-after": "2"})

    transport = HttpTransport(async_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    response = await transport.asend("POST", "http://h/x", b"{}", {}, provider="openai")
    assert response.status == 429 and response.headers["retry-after"] == "2"
    chunks: list[bytes] = []
    async with transport.astream("POST", "http://h/s", b"{}", {}, provider="openai") as wire:
        with pytest.raises(TruncatedStreamError):
            async for chunk in wire.aiter_raw():
                chunks.append(chunk)
    assert chunks == [b"a", b"b"]
    await transport.aclose()


def test_own_client_is_created_once_with_long_read_timeout_and_reused() -> None:
    transport = HttpTransport()
    client = transport.client
    assert transport.client is client
    assert client.timeout == DEFAULT_TIMEOUT
    assert (DEFAULT_TIMEOUT.connect, DEFAULT_TIMEOUT.read) == (10.0, 600.0)
    transport.close()
    assert client.is_closed
    assert "sk-" not in repr(transport)


def test_a_body_the_transport_already_read_still_streams() -> None:
    """Custom transports and mocking libraries may hand over a fully read response."""
    import asyncio

    from metis_core.transport.http import HttpTransport

    body = b"data: one\n\ndata: two\n\n"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    transport = HttpTransport(httpx.Client(transport=httpx.MockTransport(handler)),
                              httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    with transport.stream("POST", "http://x.test/s", b"{}", {}, provider="test") as stream:
        assert b"".join(stream.iter_raw()) == body

    async def read_async() -> bytes:
        async with transport.astream("POST", "http://x.test/s", b"{}", {}, provider="test") as stream:
            return b"".join([chunk async for chunk in stream.aiter_raw()])

    assert asyncio.run(read_async()) == body


def test_each_url_is_parsed_once_and_requests_still_reach_it_with_their_query() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, content=b"{}")

    transport = HttpTransport(httpx.Client(transport=httpx.MockTransport(handler)))
    url = "http://gemini.test/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    for _ in range(3):
        transport.send("POST", url, b"{}", {})
    transport.send("POST", "http://other.test/v1/messages", b"{}", {})
    assert seen == [url, url, url, "http://other.test/v1/messages"]
    assert transport._parsed(url) is transport._parsed(url)  # one parse, shared (httpx.URL is immutable)


def test_the_parsed_url_cache_stays_bounded() -> None:
    from metis_core.transport.http import URL_CACHE_SIZE

    transport = HttpTransport()
    for index in range(URL_CACHE_SIZE * 2 + 5):
        assert str(transport._parsed(f"http://model-{index}.test/x")) == f"http://model-{index}.test/x"
    assert len(transport._urls) <= URL_CACHE_SIZE
