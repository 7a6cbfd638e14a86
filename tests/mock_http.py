"""A ModelClient wired to httpx.MockTransport: canned responses, recorded requests, chunked bodies.

Import as `from mock_http import serve, ChunkedBody, split`. Nothing here reaches the network.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from metis_core.adapters.client import ModelClient
from metis_core.transport.retry import RetryPolicy

API_KEY = "sk-ant-test-SECRET-0123456789"
BASE_URL = "http://127.0.0.1:9"
MODEL = "anthropic:claude-sonnet-4-5"


class ChunkedBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body delivered in pieces, optionally dropping the connection at the end."""

    def __init__(self, chunks: list[bytes], fail: Exception | None = None) -> None:
        self.chunks = chunks
        self.fail = fail

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        if self.fail is not None:
            raise self.fail

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.fail is not None:
            raise self.fail


def split(body: bytes, size: int = 37) -> list[bytes]:
    """Cut a body at arbitrary points (mid-line, mid-UTF-8) the way a network does."""
    return [body[i : i + size] for i in range(0, len(body), size)]


@dataclass
class MockServer:
    responses: list[httpx.Response]
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        if len(self.responses) > 1:
            return self.responses.pop(0)
        return self.responses[0]


def serve(
    *responses: httpx.Response,
    retry: RetryPolicy | None = None,
    provider: str = "anthropic",
    api_key: str = API_KEY,
    **client_kwargs: Any,
) -> tuple[ModelClient, MockServer]:
    """A client whose every request gets the next response (the last one repeats)."""
    server = MockServer(list(responses))
    transport = httpx.MockTransport(server)
    client = ModelClient(
        http_client=httpx.Client(transport=transport),
        async_http_client=httpx.AsyncClient(transport=transport),
        base_urls={provider: BASE_URL},
        api_keys={provider: api_key},
        prices=client_kwargs.pop("prices", None),
        retry=retry or RetryPolicy(max_retries=0),
        **client_kwargs,
    )
    return client, server


def sse_response(body: bytes, *, chunk_size: int = 37, fail: Exception | None = None) -> httpx.Response:
    return httpx.Response(
        200, headers={"content-type": "text/event-stream"}, stream=ChunkedBody(split(body, chunk_size), fail)
    )
