"""ModelClient's async streaming, the async generators beside adapters/client.py. `ModelClient.astream`
calls `model_stream`, which behaves as that method's own body did (nothing runs before the first `anext`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
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
    from metis_core.adapters._common.tool_ids import ToolIdMap
    from metis_core.adapters.base import AdapterOptions, StreamTranslator
    from metis_core.adapters.client import ModelClient, _PreparedCall
    from metis_core.messages import Message, RoutingDecisionRecord, StreamEvent, ToolDefinition
    from metis_core.models.capabilities import AdapterCapabilities
    from metis_core.transport.framing import WireChunk


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


async def model_stream(
    client: ModelClient,
    messages: Sequence[Message],
    model: str | None,
    tools: Sequence[ToolDefinition] | None,
    options: AdapterOptions | None,
    tool_ids: ToolIdMap | None,
    session_id: str,
    routing: RoutingDecisionRecord | None,
    capabilities: AdapterCapabilities | None,
) -> AsyncIterator[StreamEvent]:
    """`client.astream`'s events: retried (with the client's backoff) only until the first content."""
    call = client._prepare(messages, model, tools, options, tool_ids, session_id, routing, capabilities, True)
    headers = await client._aheaders(call) if call.adapter.refreshes_auth else client._headers(call)
    attempt = 0
    while True:
        gate = FirstContentGate(call.adapter.provider)
        try:
            async for event in _stream_once(client, call, headers, gate):
                yield event
            return
        except ProviderError as error:
            if gate.open:
                raise
            await client.retry.abackoff(error, attempt)
            attempt += 1


async def _stream_once(
    client: ModelClient, call: _PreparedCall, headers: dict[str, str], gate: FirstContentGate
) -> AsyncIterator[StreamEvent]:
    adapter = call.adapter
    provider = adapter.provider
    async with client._wire(call).astream(
        call.request.method, call.url, call.body, headers, provider=adapter.provider
    ) as wire:
        if not 200 <= wire.status < 300:
            raise classify_checked(adapter, await wire.read())
        raws: AsyncIterator[bytes] | None = None
        if is_json_body(wire.headers):  # a server that ignores `stream` answers whole
            whole = await wire.read()
            events = whole_answer_events(adapter, whole, call.context)
            if events is not None:
                for event in [*gate.push(events), *gate.close()]:
                    yield event
                return
            raws = _once(whole.body)
        decoder = adapter.chunk_decoder()
        translator = adapter.stream_translator(call.context)
        try:
            async for raw in raws if raws is not None else wire.aiter_raw():
                for chunk in decoder.feed(raw):
                    try:
                        events = translator.feed(chunk)
                    except PARSE_FAILURES as error:
                        raise malformed_event(chunk, error, provider) from None
                    for event in events if gate.open else gate.push(events):  # an open gate passes all
                        yield event
            for chunk in decoder.finish():
                for event in gate.push(feed_last(translator, chunk, adapter.provider)):
                    yield event
        except ProviderError as error:
            if not gate.open:
                raise
            for event in annotate_failure(finish_checked(translator, provider), error):
                yield event
            return
        for event in [*gate.push(finish_checked(translator, provider)), *gate.close()]:
            yield event


async def _once(body: bytes) -> AsyncIterator[bytes]:
    """A body already read, as the one raw chunk of a stream."""
    yield body
