"""FallbackChain's stream, the async generator beside routing/fallback.py. `FallbackChain.astream` calls
`chain_stream`, which behaves as that method's own body did (nothing runs before the first `anext`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from metis_core.messages import MessageComplete, StreamError

if TYPE_CHECKING:
    from metis_core.adapters._common.tool_ids import ToolIdMap
    from metis_core.adapters.base import AdapterOptions
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
    attempts = chain._attempts(options, routing, observer)
    while (model := attempts.next()) is not None:
        with attempts.trying(model):
            if request_for is None:
                sent, offered, opts = messages, tools, attempts.options(model)
            else:
                asked = request_for(model)
                sent, offered, opts = asked.messages, asked.tools, chain.options_for(asked.options, model)
            if stream:
                events = chain.client.astream(sent, model, tools=offered, options=opts, tool_ids=tool_ids,
                                              session_id=session_id, routing=attempts.routing(model))
                try:
                    async for event in events:
                        if isinstance(event, StreamError):
                            attempts.note_mid_stream_failure(model, event)  # the partial message stands: no fallback
                        yield event
                finally:
                    close = getattr(events, "aclose", None)
                    if close is not None:  # closing the chain's stream closes the member's response at once
                        await close()
            else:
                message = await chain.client.acomplete(sent, model, tools=offered, options=opts, tool_ids=tool_ids,
                                                       session_id=session_id, routing=attempts.routing(model))
                yield MessageComplete(message=message, stop_reason=message.metadata.stop_reason)
            return
    raise attempts.exhausted()
