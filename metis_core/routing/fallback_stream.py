"""FallbackChain's stream, the async generator beside routing/fallback.py. `FallbackChain.astream` calls
`chain_stream`, which behaves as that method's own body did (nothing runs before the first `anext`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from metis_core.adapters.base import AdapterOptions
from metis_core.errors import CapabilityMismatchError, ProviderError
from metis_core.messages import MessageComplete, StreamError

if TYPE_CHECKING:
    from metis_core.adapters._common.tool_ids import ToolIdMap
    from metis_core.messages import Message, RoutingDecisionRecord, StreamEvent, ToolDefinition
    from metis_core.routing.fallback import ChainObserver, FallbackChain, RequestFor


async def chain_stream(
    chain: FallbackChain,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition] | None,
    options: AdapterOptions | None,
    tool_ids: ToolIdMap | None,
    session_id: str,
    routing: RoutingDecisionRecord | None,
    observer: ChainObserver | None,
    stream: bool,
    request_for: RequestFor | None,
) -> AsyncIterator[StreamEvent]:
    """`chain.astream`'s events: from the first member that starts answering, falling back only
    before the first token."""
    base = options or AdapterOptions(model=chain.members[0])
    attempts = chain._attempts(routing, observer)
    while (model := attempts.next()) is not None:
        try:
            sent, offered = messages, tools
            if request_for is not None:
                asked = request_for(model)
                sent, offered, base = asked.messages, asked.tools, asked.options
            opts = chain.options_for(base, model)
            if stream:
                failed_mid_stream = False
                async for event in chain.client.astream(sent, model, tools=offered, options=opts,
                                                        tool_ids=tool_ids, session_id=session_id,
                                                        routing=attempts.routing(model)):
                    if isinstance(event, StreamError):
                        failed_mid_stream = True
                        attempts.note_mid_stream_failure(model, event)
                    yield event
                if failed_mid_stream:
                    return  # the partial message was surfaced; a mid-stream failure never falls back
            else:
                message = await chain.client.acomplete(sent, model, tools=offered, options=opts,
                                                       tool_ids=tool_ids, session_id=session_id,
                                                       routing=attempts.routing(model))
                yield MessageComplete(message=message, stop_reason=message.metadata.stop_reason)
        except (ProviderError, CapabilityMismatchError) as error:
            attempts.failed(model, error)
            continue
        attempts.succeeded(model)
        return
    raise attempts.exhausted()
