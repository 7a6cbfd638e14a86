"""A Bedrock Converse response -> one canonical assistant Message, through the shared MessageAssembler.

Content blocks: `text`, `toolUse` (its id kept in the tool-id map), `reasoningContent` (text with
its signature, or `redactedContent`; both bound to origin bedrock/converse/<model id>),
`citationsContent` (text with its citations). A block type newer than this adapter is skipped and
named in provider_raw. A guardrail intervention (`guardrail_intervened`, `content_filtered`) is a
named refusal on the record: stop_reason `refusal`, provider_raw `refusal` and the guardrail trace.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.bedrock.request import API
from metis_core.adapters.bedrock.usage import usage_from_wire
from metis_core.errors import MalformedResponseError
from metis_core.messages import BlockOrigin, Citation, Message, MessageComplete, StreamEvent
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.adapters.base import RequestContext

PROVIDER = "bedrock"

STOP_REASONS: dict[str, str] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "refusal",
    "content_filtered": "refusal",
}
REFUSALS = frozenset({"guardrail_intervened", "content_filtered"})


def canonical_stop_reason(raw: object) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise MalformedResponseError(f"stopReason is {type(raw).__name__}, not a string", provider=PROVIDER)
    return STOP_REASONS.get(raw, "end_turn")


def raw_details(stop_reason: object, extra: dict[str, Any]) -> dict[str, Any]:
    """What the record keeps of the answer beyond its blocks: the wire stop reason, a guardrail refusal
    by name, its trace, and the model's additional response fields."""
    raw: dict[str, Any] = {}
    if isinstance(stop_reason, str):
        raw["stop_reason"] = stop_reason
        if stop_reason in REFUSALS:
            raw["refusal"] = stop_reason
    for wire_name, name in (("trace", "trace"), ("additionalModelResponseFields", "additional_fields"),
                            ("performanceConfig", "performance_config")):
        value = extra.get(wire_name)
        if value:
            raw[name] = value
    return raw


def citation(wire: dict[str, Any], origin: BlockOrigin) -> Citation:
    """A Converse citation (title, sourceContent, location) as a canonical Citation with the payload kept."""
    title = wire.get("title")
    source = [part.get("text") for part in wire.get("sourceContent") or () if isinstance(part, dict)]
    web = (wire.get("location") or {}).get("web") if isinstance(wire.get("location"), dict) else None
    url = web.get("url") if isinstance(web, dict) else None
    return Citation(
        url=url if isinstance(url, str) else None,
        title=title if isinstance(title, str) else None,
        cited_text="".join(text for text in source if isinstance(text, str)) or None,
        payload=wire,
        origin=origin,
    )


def add_block(asm: MessageAssembler, key: Hashable, block: dict[str, Any], skipped: list[str]) -> list[StreamEvent]:
    """One whole Converse content block into the assembler; returns its stream events."""
    if "text" in block:
        return [asm.text(key, block["text"])]
    if "toolUse" in block:
        tool = block["toolUse"]
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
            raise MalformedResponseError(f"content[{key}] is a toolUse without a name", provider=PROVIDER)
        tool_id = tool.get("toolUseId")
        start = asm.tool_start(key, tool_id if isinstance(tool_id, str) and tool_id else None, tool["name"])
        tool_input = tool.get("input")
        asm.tool_input_object(key, tool_input if isinstance(tool_input, dict) else {})
        return [start]
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"] if isinstance(block["reasoningContent"], dict) else {}
        if "redactedContent" in reasoning:
            asm.redacted_thinking(key, reasoning["redactedContent"])
            return []
        found = reasoning.get("reasoningText")
        text: dict[str, Any] = found if isinstance(found, dict) else {}
        events: list[StreamEvent] = [asm.thinking(key, text.get("text") or "")]
        if text.get("signature") is not None:
            asm.thinking_signature(key, text["signature"])
        return events
    if "citationsContent" in block:
        cited = block["citationsContent"] if isinstance(block["citationsContent"], dict) else {}
        events = [asm.citation(key, citation(c, asm.origin)) for c in cited.get("citations") or ()
                  if isinstance(c, dict)]
        parts = [p.get("text") for p in cited.get("content") or () if isinstance(p, dict)]
        events.append(asm.text(key, "".join(p for p in parts if isinstance(p, str))))
        return events
    skipped.extend(block)
    return []


def parse_response(response: WireResponse, context: RequestContext) -> Message:
    data = response.json(PROVIDER)
    output = data.get("output") if isinstance(data, dict) else None
    message = output.get("message") if isinstance(output, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        raise response.malformed(PROVIDER, "response has no output.message.content list; is the base URL a "
                                           "bedrock-runtime endpoint?")
    asm = MessageAssembler(context, api=API)
    skipped: list[str] = []
    for index, block in enumerate(content):
        if isinstance(block, dict):
            add_block(asm, index, block, skipped)
    asm.set_usage(usage_from_wire(data.get("usage")))
    asm.provider_raw.update(raw_details(data.get("stopReason"), data))
    if skipped:
        asm.provider_raw["skipped_block_types"] = skipped
    events = asm.complete(canonical_stop_reason(data.get("stopReason")))
    answer: Message = next(event.message for event in events if isinstance(event, MessageComplete))
    return answer
