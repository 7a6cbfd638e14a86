"""The transport's async generators, beside http.py and owned_async.py.

Each is called by a plain method there (`AsyncByteStream.aiter_raw`, `HttpTransport.astream`,
`OwnedAsyncClient.stream`) and behaves as that method's own body did.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import httpx

    from metis_core.errors import NetworkError
    from metis_core.transport.http import AsyncByteStream

Stream = TypeVar("Stream", bound="AsyncByteStream")


async def raw_chunks(stream: AsyncByteStream) -> AsyncIterator[bytes]:
    """`stream`'s body chunks as they arrive; a transport failure mid-body raised as its NetworkError."""
    failure: NetworkError | None = None
    try:
        async for chunk in stream._chunks():
            yield chunk
    except stream._failures as exc:
        failure = stream._error(exc, mid_stream=True)
    if failure is not None:
        raise failure  # outside the handler: no __context__ pointing at the request


async def httpx_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """An httpx streaming response's raw chunks (its whole content when a transport already read it)."""
    if response.is_stream_consumed:  # a transport that handed over a body it already read
        yield response.content
        return
    async for chunk in response.aiter_raw():
        yield chunk


@asynccontextmanager
async def opened_stream(opening: Awaitable[Stream]) -> AsyncIterator[Stream]:
    """The stream `opening` sends for, released when the `async with` block ends, however it ends."""
    stream = await opening
    try:
        yield stream
    finally:
        await stream.release()
