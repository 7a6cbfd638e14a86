"""A streaming request answered with one whole JSON body (a server that ignores `stream`).

The body is parsed as the non-streamed answer it is, and told as the events a stream of that answer
would have given: text (with its citations) and thinking as one delta each, a tool call's start and end, any other block
whole, the usage, then MessageComplete. A body that is not one JSON object goes to the stream
decoder as before (a server that labels its stream `application/json`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from metis_core.adapters.parse_guard import parse_response_checked
from metis_core.messages import (
    CitationDelta,
    MessageComplete,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    ToolUseEnd,
    ToolUseStart,
    UsageUpdate,
    WholeBlock,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from metis_core.adapters.base import Adapter, RequestContext
    from metis_core.transport.wire import WireResponse


def is_json_body(headers: Mapping[str, str]) -> bool:
    """The response says it is one JSON document, not an event stream."""
    return str(headers.get("content-type") or "").lower().startswith("application/json")


def whole_answer_events(adapter: Adapter, response: WireResponse, context: RequestContext) -> list[StreamEvent] | None:
    """The events of the answer `response` holds; None when the body is not one JSON object."""
    try:
        parsed = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parsed, dict):
        return None
    message = parse_response_checked(adapter, response, context)
    events: list[StreamEvent] = []
    for index, block in enumerate(message.content):
        if isinstance(block, TextBlock):
            events.append(TextDelta(index, block.text))
            events += [CitationDelta(index, citation) for citation in block.citations or ()]
        elif isinstance(block, ThinkingBlock):
            events.append(ThinkingDelta(index, block.text))
        elif isinstance(block, ToolUseBlock):
            events += [ToolUseStart(index, block.id, block.name), ToolUseEnd(index, block.id, block.name, block.input)]
        else:
            events.append(WholeBlock(index, block))
    if message.metadata.usage is not None:
        events.append(UsageUpdate(message.metadata.usage))
    events.append(MessageComplete(message, message.metadata.stop_reason))
    return events
