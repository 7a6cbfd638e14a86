"""The last step of every response parse: canonical content blocks -> the assistant Message.

Shared by the stream assembler and the adapters' direct non-streaming parsers, so both stamp the
same metadata (routing record, priced usage, tool-input violations) on the same Message. It
builds no blocks and reads no wire data: callers hand it content already in canonical form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from metis_core.adapters._common.tool_input_ingress import ingress_violations
from metis_core.messages import (
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    RoutingDecisionRecord,
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
        violations = ingress_violations(content, context.tools, message_id=context.message_id, model=context.model)
    fields = {
        "tool_input_violations": violations, "model": context.model, "provider": context.provider,
        "routing": context.routing_record(), "usage": context.finish_usage(usage if usage is not None else Usage()),
        "status": status, "stop_reason": stop_reason, "provider_raw": provider_raw or None,
    }  # fmt: skip
    if _prechecked(fields, content):
        return prechecked.message(_ASSISTANT, context.session_id, content, prechecked.metadata(**fields),
                                  context.message_id)
    return Message(id=context.message_id, session_id=context.session_id, role=_ASSISTANT, content=content,
                   metadata=MessageMetadata(**fields))


def _prechecked(fields: dict[str, Any], content: list[Any]) -> bool:
    """Whether the answer's parts have their fields' exact types already (every parser's do), so the
    Message is built without validating them again; anything else takes the constructors."""
    stop_reason, raw = fields["stop_reason"], fields["provider_raw"]
    return (
        type(fields["routing"]) is RoutingDecisionRecord and type(fields["usage"]) is Usage
        and (stop_reason is None or type(stop_reason) is str) and (raw is None or type(raw) is dict)
        and prechecked.canonical_blocks(content)
    )

