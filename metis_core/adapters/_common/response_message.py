"""The last step of every response parse: canonical content blocks -> the assistant Message.

Shared by the stream assembler and the adapters' direct non-streaming parsers, so both stamp the
same metadata (routing record, priced usage, tool-input violations) on the same Message. It
builds no blocks and reads no wire data: callers hand it content already in canonical form.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

from metis_core.adapters._common.tool_input_ingress import ingress_violations
from metis_core.messages import (
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    Usage,
    prechecked,
)

if TYPE_CHECKING:
    from metis_core.adapters.base import RequestContext

_COMPLETE, _ASSISTANT = MessageStatus.COMPLETE, Role.ASSISTANT


def assistant_message(
    context: RequestContext,
    content: list[Any],
    status: MessageStatus,
    stop_reason: str | None,
    usage: Usage | None,
    provider_raw: dict[str, Any],
) -> Message:
    """The answer as a Message; a COMPLETE one without content gets one empty text block."""
    if status is _COMPLETE and not content:
        content.append(TextBlock(text=""))
    violations = None
    if status is _COMPLETE and context.tools:
        violations = ingress_violations(content, context.tools, message_id=context.message_id, model=context.model,
                                        exempt=provider_shaped_calls(provider_raw))
    routing = routing_record(context)
    usage = finish_usage(context, usage if usage is not None else Usage())
    raw = provider_raw or None
    if (
        type(routing) is RoutingDecisionRecord and type(usage) is Usage
        and (stop_reason is None or type(stop_reason) is str) and (raw is None or type(raw) is dict)
        and prechecked.answer_blocks(content)
    ):  # the answer's parts have their fields' exact types already (every parser's do): built without validating
        metadata = prechecked.answer_metadata(context.model, context.provider, routing, usage, status, stop_reason,
                                              raw, violations)
        return prechecked.answer(context.session_id, content, metadata, context.message_id)
    return Message(id=context.message_id, session_id=context.session_id, role=_ASSISTANT, content=content,
                   metadata=MessageMetadata(
                       tool_input_violations=violations, model=context.model, provider=context.provider,
                       routing=routing, usage=usage, status=status, stop_reason=stop_reason, provider_raw=raw))


def provider_shaped_calls(provider_raw: dict[str, Any]) -> frozenset[str]:
    """Ids of the calls whose tools the provider defines, not the request's function tools (Responses'
    client-run items and custom tool calls, listed in its raw record): no offered schema applies to them."""
    shaped: set[str] = set()
    for record in provider_raw.values():
        if type(record) is dict and ("client_calls" in record or "custom_tool_calls" in record):
            shaped.update(record.get("client_calls") or ())
            shaped.update(record.get("custom_tool_calls") or ())
    return frozenset(shaped) if shaped else _NONE_SHAPED


_NONE_SHAPED: Final[frozenset[str]] = frozenset()


DIRECT_ROUTING_REASON = "direct adapter call (no routing engine)"
_DEFAULT_ROUTING: Final = RoutingMode.DEFAULT


def routing_record(context: RequestContext) -> RoutingDecisionRecord:
    """The routing record the context holds, else a direct call's: what `RequestContext.routing_record` gives
    (it calls this)."""
    if context.routing is not None:
        return context.routing
    return prechecked.routing_record(_DEFAULT_ROUTING, context.model, DIRECT_ROUTING_REASON)


def finish_usage(context: RequestContext, usage: Usage) -> Usage:
    """Stamp latency and price a normalized usage (cost stays None for unpriced models): what
    `RequestContext.finish_usage` does (it calls this)."""
    prices = context.prices
    cost = prices.cost(usage, context.model) if prices is not None else None
    latency_ms = int((time.perf_counter() - context.started_at) * 1000)
    if type(usage) is Usage:
        prechecked.price_usage(usage, latency_ms, cost)  # what assigning the fields does, faster
        return usage
    usage.latency_ms = latency_ms
    if cost is not None:
        usage.cost_usd, usage.pricing_version = cost
    return usage
