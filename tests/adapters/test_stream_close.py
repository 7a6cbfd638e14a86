"""Closing an async stream early (`aclose`, as the gateway does when its client leaves) closes the
provider's response before `aclose` returns, through ModelClient.astream and through a fallback chain."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from fixture_files import read_bytes
from mock_http import MODEL, serve, split

from metis_core.messages import TextDelta, user_message
from metis_core.routing.fallback import FallbackChain


class WatchedBody(httpx.AsyncByteStream):
    """A recorded stream in network-sized pieces that notes when the client closes it."""

    def __init__(self, body: bytes) -> None:
        self.pieces = split(body, 64)
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece

    async def aclose(self) -> None:
        self.closed = True


def watched_stream() -> tuple[WatchedBody, httpx.Response]:
    body = WatchedBody(read_bytes("anthropic", "stream__cache_read_usage.sse"))
    return body, httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)


async def test_closing_a_stream_after_its_first_text_closes_the_response_at_once() -> None:
    body, response = watched_stream()
    client, _ = serve(response)
    events = client.astream([user_message("hi")], model=MODEL)
    async for event in events:
        if isinstance(event, TextDelta):
            break
    assert not body.closed  # still streaming: nothing but the close below may end it
    await events.aclose()  # type: ignore[attr-defined]
    assert body.closed


async def test_closing_a_chains_stream_closes_its_members_response_at_once() -> None:
    body, response = watched_stream()
    client, _ = serve(response)
    events = FallbackChain(client, [MODEL]).astream([user_message("hi")])
    async for event in events:
        if isinstance(event, TextDelta):
            break
    await events.aclose()  # type: ignore[attr-defined]
    assert body.closed
