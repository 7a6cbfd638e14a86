"""The one boundary where whatever a provider sent is turned into canonical values or a named error.

Adapters validate what they read as they go; this module is the net under them. A body, stream
event or error body whose shape breaks a parser (a missing key, a wrong type, an unhashable
value, a number or nesting past what Python or the canonical hash holds) becomes a
`MalformedResponseError` that names the event; a translator that breaks while finishing still ends
its stream with an `error` event and one `message_complete` (PARTIAL with the text so far).
The error classifier never fails: an unreadable error body falls back to its HTTP status.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metis_core.errors import (
    AuthenticationError,
    InvalidRequestError,
    MalformedResponseError,
    OtherProviderError,
    ProviderError,
    RateLimitError,
    ServerError,
)
from metis_core.transport.retry import parse_retry_after
from metis_core.transport.wire import request_id_from_headers

if TYPE_CHECKING:
    from metis_core.adapters._common.assembler import MessageAssembler
    from metis_core.adapters.base import Adapter, RequestContext, StreamTranslator
    from metis_core.messages import Message, StreamEvent
    from metis_core.transport.framing import WireChunk
    from metis_core.transport.wire import WireResponse

PARSE_FAILURES = (LookupError, TypeError, ValueError, AttributeError, ArithmeticError, RecursionError)
"""What a parser raises when a body is not the shape it reads (KeyError, IndexError, ...)."""


def _why(error: BaseException) -> str:
    kind = type(error).__name__
    detail = str(error)[:160]
    return f"{kind}: {detail}" if detail else kind


def event_name(chunk: WireChunk) -> str:
    """How a message names a stream unit: its SSE event name, else the start of its data."""
    if chunk.event:
        return f"stream event {chunk.event!r}"
    return f"stream chunk {chunk.data[:120]!r}"


def feed_checked(translator: StreamTranslator, chunk: WireChunk, provider: str) -> list[StreamEvent]:
    """`translator.feed(chunk)`, with any parse failure named as a MalformedResponseError. (The stream readers
    in client_streams.py write this try out, as it runs once per event.)"""
    try:
        return translator.feed(chunk)
    except PARSE_FAILURES as error:
        raise malformed_event(chunk, error, provider) from None


def malformed_event(chunk: WireChunk, error: BaseException, provider: str) -> MalformedResponseError:
    """The error for a stream event whose shape broke the translator reading it."""
    return MalformedResponseError(
        f"{event_name(chunk)} has an unexpected shape ({_why(error)}); "
        "the partial answer is kept, retry the turn for a full one",
        provider=provider,
    )


def _assembler_of(translator: StreamTranslator) -> MessageAssembler | None:
    from metis_core.adapters._common.assembler import MessageAssembler  # streams only; loaded with them

    for value in vars(translator).values():
        if isinstance(value, MessageAssembler):
            return value
    return None


def finish_checked(translator: StreamTranslator, provider: str) -> list[StreamEvent]:
    """`translator.finish()`; if the translator breaks, or believes it ended a message its assembler
    never completed (it broke on its terminal event), the assembler ends the stream."""
    assembler = _assembler_of(translator)
    try:
        events = translator.finish()
    except PARSE_FAILURES as error:
        message = f"the stream could not be read to its end ({_why(error)}); the partial answer is kept"
        if assembler is None:
            raise MalformedResponseError(message, provider=provider) from None
        return assembler.abandon(message)
    if assembler is not None and not assembler.finished:
        events = [*events, *assembler.abandon("the stream broke on its final event; the partial answer is kept")]
    return events


def parse_response_checked(adapter: Adapter, response: WireResponse, context: RequestContext) -> Message:
    """`adapter.from_wire_response`, with any parse failure named as a MalformedResponseError."""
    try:
        return adapter.from_wire_response(response, context)
    except PARSE_FAILURES as error:
        raise response.malformed(adapter.provider, f"response body has an unexpected shape ({_why(error)})") from None


def status_fallback(response: WireResponse, provider: str) -> ProviderError:
    """The error an HTTP status alone stands for, when the body could not be classified."""
    status = response.status
    cls: type[ProviderError] = OtherProviderError
    if status in (401, 403):
        cls = AuthenticationError
    elif status == 429:
        cls = RateLimitError
    elif status >= 500 or status == 408:
        cls = ServerError
    elif 400 <= status < 500:
        cls = InvalidRequestError
    excerpt = response.body[:200].decode("utf-8", "replace").strip()
    return cls(
        f"HTTP {status} with an error body metis could not read: {excerpt!r}",
        provider=provider,
        status=status,
        request_id=request_id_from_headers(response.headers),
        retry_after=parse_retry_after(response.headers),
    )


def classify_checked(adapter: Adapter, response: WireResponse) -> ProviderError:
    """`adapter.classify_error`, never raising: an odd body falls back to the status."""
    try:
        return adapter.classify_error(response)
    except PARSE_FAILURES:
        return status_fallback(response, adapter.provider)
