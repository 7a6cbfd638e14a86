"""ModelClient's streaming. `StreamReading` holds one attempt's decoder, translator and first-content gate
and takes the steps that run once a stream (an answer read whole, the end, a failure) without I/O;
`stream_events` and `astream_events` read the wire, run the per-event step and retry until the first
content (stream_gate.py). `ModelClient.stream` prepares the call before returning; `astream` at the first
`anext`, as an async generator does."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING

from metis_core.adapters.parse_guard import (
    PARSE_FAILURES,
    classify_checked,
    feed_checked,
    finish_checked,
    malformed_event,
)
from metis_core.adapters.stream_gate import FirstContentGate, annotate_failure
from metis_core.adapters.whole_answer_stream import is_json_body, whole_answer_events
from metis_core.errors import MalformedResponseError, ProviderError, TruncatedStreamError

if TYPE_CHECKING:
    from metis_core.adapters.base import StreamTranslator
    from metis_core.adapters.client import ModelClient, _PreparedCall
    from metis_core.messages import StreamEvent
    from metis_core.transport.framing import WireChunk
    from metis_core.transport.wire import WireResponse


def feed_last(translator: StreamTranslator, chunk: WireChunk, provider: str) -> list[StreamEvent]:
    """Feed an event the body ended without terminating: if it does not parse, the body was cut off."""
    try:
        return feed_checked(translator, chunk, provider)
    except MalformedResponseError:
        raise TruncatedStreamError(
            "the stream ended in the middle of an event (body cut off); "
            "the partial answer is kept, retry the turn for a full one",
            provider=provider,
        ) from None


def answered_whole(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a streamed request's answer is read at once (`StreamReading.whole`): an error status, or one
    JSON body from a server that ignores `stream`."""
    return not 200 <= status < 300 or is_json_body(headers)


class StreamReading:
    """One attempt at a streamed answer: the framing decoder, the provider's translator and the first-content
    gate, with the steps that run once a stream (an answer read whole, the end, a failure). It does no I/O.
    The step run once per event is written out where the wire is read (`stream_events`, `astream_events`):
    a method call per event there costs ~0.6 % of a stream's instructions."""

    __slots__ = ("_call", "decoder", "gate", "provider", "translator")

    def __init__(self, call: _PreparedCall) -> None:
        adapter = call.adapter
        self._call = call
        self.provider = adapter.provider
        self.gate = FirstContentGate(self.provider)
        self.decoder = adapter.chunk_decoder()
        self.translator = adapter.stream_translator(call.context)

    @property
    def started(self) -> bool:
        """Whether any event was released: a failure from now on ends the stream instead of being retried."""
        return self.gate.open

    def whole(self, response: WireResponse) -> Iterator[StreamEvent]:
        """The events of an answer read at once: an error status raises its ProviderError, a JSON answer is
        told as the events its stream would have given, any other body is read as a stream of one piece."""
        adapter = self._call.adapter
        if not 200 <= response.status < 300:
            raise classify_checked(adapter, response)
        events = whole_answer_events(adapter, response, self._call.context)
        if events is not None:
            yield from [*self.gate.push(events), *self.gate.close()]
            return
        try:
            for chunk in self.decoder.feed(response.body):
                yield from self.gate.push(feed_checked(self.translator, chunk, self.provider))
        except ProviderError as error:
            yield from self.broken(error)
            return
        yield from self.end()

    def end(self) -> Iterator[StreamEvent]:
        """The events after the body's last piece: what the framing still held (a body cut off in the
        middle of an event is a TruncatedStreamError), the translator's last ones, what the gate held."""
        try:
            for chunk in self.decoder.finish():
                yield from self.gate.push(feed_last(self.translator, chunk, self.provider))
        except ProviderError as error:
            yield from self.broken(error)
            return
        yield from [*self.gate.push(finish_checked(self.translator, self.provider)), *self.gate.close()]

    def broken(self, error: ProviderError) -> list[StreamEvent]:
        """How `error` ends the stream: raised while the gate holds everything (the call can be retried),
        else the translator's last events, their error event describing `error`, and a PARTIAL message."""
        if not self.gate.open:
            raise error
        return annotate_failure(finish_checked(self.translator, self.provider), error)


def stream_events(client: ModelClient, call: _PreparedCall, headers: dict[str, str]) -> Iterator[StreamEvent]:
    """`client.stream`'s events: retried (with the client's backoff) only until the first content."""
    attempt = 0
    while True:
        reading = StreamReading(call)
        try:
            yield from _read(client, call, headers, reading)
            return
        except ProviderError as error:
            if reading.started:
                raise
            client.retry.backoff(error, attempt)
            attempt += 1


def _read(client: ModelClient, call: _PreparedCall, headers: dict[str, str],
          reading: StreamReading) -> Iterator[StreamEvent]:
    decoder, translator, gate, provider = reading.decoder, reading.translator, reading.gate, reading.provider
    with client._wire(call).stream(call.request.method, call.url, call.body, headers, provider=provider) as wire:
        if answered_whole(wire.status, wire.headers):
            yield from reading.whole(wire.read())
            return
        try:
            for raw in wire.iter_raw():
                for chunk in decoder.feed(raw):
                    try:
                        events = translator.feed(chunk)  # feed_checked, written out: this runs once per event
                    except PARSE_FAILURES as error:
                        raise malformed_event(chunk, error, provider) from None
                    yield from events if gate.open else gate.push(events)  # an open gate passes all
        except ProviderError as error:
            yield from reading.broken(error)
            return
        yield from reading.end()


async def astream_events(client: ModelClient, prepare: Callable[[], _PreparedCall]) -> AsyncIterator[StreamEvent]:
    """`client.astream`'s events, the call prepared (`prepare`) at the first `anext`: retried (with the
    client's backoff) only until the first content."""
    call = prepare()
    headers = await client._aheaders(call)
    attempt = 0
    while True:
        reading = StreamReading(call)
        try:
            async with aclosing(_aread(client, call, headers, reading)) as events:  # closing this closes the wire
                async for event in events:
                    yield event
            return
        except ProviderError as error:
            if reading.started:
                raise
            await client.retry.abackoff(error, attempt)
            attempt += 1


async def _aread(client: ModelClient, call: _PreparedCall, headers: dict[str, str],
                 reading: StreamReading) -> AsyncGenerator[StreamEvent, None]:
    decoder, translator, gate, provider = reading.decoder, reading.translator, reading.gate, reading.provider
    async with client._wire(call).astream(call.request.method, call.url, call.body, headers,
                                          provider=provider) as wire:
        if answered_whole(wire.status, wire.headers):
            for event in reading.whole(await wire.read()):
                yield event
            return
        try:
            async for raw in wire.aiter_raw():
                for chunk in decoder.feed(raw):
                    try:
                        events = translator.feed(chunk)  # feed_checked, written out: this runs once per event
                    except PARSE_FAILURES as error:
                        raise malformed_event(chunk, error, provider) from None
                    for event in events if gate.open else gate.push(events):  # an open gate passes all
                        yield event
        except ProviderError as error:
            for event in reading.broken(error):
                yield event
            return
        for event in reading.end():
            yield event
