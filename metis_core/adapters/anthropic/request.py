"""Canonical messages, tools and options -> an Anthropic Messages request body.

System messages are hoisted to the top-level `system`; TOOL messages become tool_result blocks of
one user turn (user text that follows joins it); consecutive same-role turns are merged as the
API requires. Thinking replays only to the model that signed it, on any Claude platform; what
Anthropic cannot take (foreign thinking, `file_ref` images, images to a text-only model) is dropped
through the lossy log. Plain dicts are built straight from the model attributes: a hot path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from metis_core.adapters._common.encoded_body import EncodedItems, items_json, joined
from metis_core.adapters._common.history_memo import HistoryMemo, Identity, first_sight, keep, resumed_wire
from metis_core.adapters._common.hosted import (
    HOSTED_CLASSES,
    cited,
    note_foreign_citations,
    replayable,
    text_for_other_target,
)
from metis_core.adapters._common.lossy import DroppedBlock, record_block_drop
from metis_core.adapters._common.per_tool_cache import WireToolsMemo
from metis_core.adapters._common.platform_origin import claude_signature_travels, redacted_data
from metis_core.adapters._common.repair import repair_history
from metis_core.adapters._common.replay import origin_mismatch_reason, replayable_to
from metis_core.adapters._common.tool_ids import RequestToolIds, ToolIdMap, UsedIds
from metis_core.adapters.anthropic.hosted import call_fields, hosted_tool_definitions, pending_container
from metis_core.adapters.base import AdapterOptions, WireRequest
from metis_core.errors import ModelIdError, UnknownModelError
from metis_core.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

if TYPE_CHECKING:
    from metis_core.adapters.base import Adapter
    from metis_core.messages import ToolDefinition
    from metis_core.models.capabilities import AdapterCapabilities

PROVIDER: Final = "anthropic"
API: Final = "messages"
PATH: Final = "/v1/messages"
API_VERSION: Final = "2023-06-01"
ADAPTER_NAME: Final = "anthropic/messages"

DEFAULT_MAX_TOKENS_UNKNOWN_MODEL: Final = 8_192
DEFAULT_MAX_TOKENS_CAP: Final = 16_384
"""Default when the caller sets none: the model's limit, capped so a non-streaming call stays short."""

EFFORT_BUDGETS: Final[dict[str, int]] = {"minimal": 1_024, "low": 2_048, "medium": 8_192, "high": 16_384}
"""reasoning_effort -> thinking budget_tokens, for callers that speak in efforts."""

CACHE_CONTROL_KEY: Final = "cache_control"

_ASSISTANT: Final = Role.ASSISTANT  # bound once: enum class lookups add up per message
_SYSTEM: Final = Role.SYSTEM


_HeldTurns = tuple[list[dict[str, Any]], dict[str, Any] | None, bool | None, tuple[Message, ...], bytes, UsedIds,
                   tuple[DroppedBlock, ...]]
"""At the end of a history: its turns but the last as sent, the last as built (the next message may join it), whose
the last is, the system messages met, the JSON of the turns as sent, the tool ids used, the drops."""
_histories: Final[HistoryMemo[_HeldTurns]] = HistoryMemo()

NATIVE_COMPACTION_MIN_TRIGGER = 50_000
"""The smallest trigger Anthropic's server-side compaction accepts (input tokens)."""
NATIVE_COMPACTION_BETAS = {"compact_20260112": "compact-2026-01-12"}


def cache_control_of(message: Message) -> dict[str, Any] | None:
    """A cache breakpoint recorded on a message (metadata.provider_raw["anthropic"]["cache_control"])."""
    raw = message.metadata.provider_raw
    if not raw:
        return None
    anthropic = raw.get(PROVIDER)
    if isinstance(anthropic, dict):
        value = anthropic.get(CACHE_CONTROL_KEY)
        return value if isinstance(value, dict) else None
    return None


class _Builder:
    """State of one to_wire call: target, id map, drop list."""

    __slots__ = ("caps", "dropped", "encoded", "memo", "model_name", "session_id", "tool_ids", "wire_id")

    def __init__(self, options: AdapterOptions, tool_ids: ToolIdMap, caps: AdapterCapabilities | None) -> None:
        self.model_name = options.model_name
        self.session_id = options.session_id
        self.tool_ids = tool_ids
        self.caps = caps
        self.dropped: list[DroppedBlock] = []
        self.encoded: list[EncodedItems] = []
        """The body's lists whose JSON is known (the turns sent before, the tools)."""
        # ids are namespaced by the provider the request goes to, as the response issued them (Claude on
        # Vertex gets back the ids Vertex issued, not Anthropic direct's)
        target = options.model.partition(":")[0] if ":" in options.model else PROVIDER
        self.wire_id = RequestToolIds(tool_ids, target, "anthropic")
        self.memo = _histories.table((options.model, self.session_id, Identity(caps)))
        """This target's held histories: the context is everything a message's mapping reads beyond it."""

    def drop(self, message: Message, index: int, block_type: str, reason: str) -> None:
        record_block_drop(self.dropped, ADAPTER_NAME, self.session_id, message, index, block_type, reason)

    def image(self, message: Message, index: int, block: ImageBlock) -> dict[str, Any] | None:
        if self.caps is not None and not self.caps.supports_images:
            self.drop(message, index, "image", f"{self.model_name} takes no image input")
            return None
        source = block.source
        if source.kind == "base64":
            return {"type": "image", "source": {"type": "base64", "media_type": block.media_type, "data": source.data}}
        if source.kind == "url":
            return {"type": "image", "source": {"type": "url", "url": source.data}}
        self.drop(message, index, "image", "file_ref images must be read and inlined by the caller before to_wire")
        return None

    def cited_text(self, message: Message, index: int, block: TextBlock) -> dict[str, Any]:
        citations = cited(block, PROVIDER, API)
        if len(citations) != len(block.citations or ()):
            note_foreign_citations(self.drop, message, index, block)
        if not citations:
            return {"type": "text", "text": block.text}
        return {"type": "text", "text": block.text, "citations": citations}

    def tool_result(self, message: Message, index: int, block: ToolResultBlock) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": self.wire_id(block.tool_use_id),
        }
        content = block.content
        if len(content) == 1 and type(content[0]) is TextBlock:  # the usual result: one text
            text = content[0].text
            if text:
                out["content"] = [{"type": "text", "text": text}]
        else:
            parts: list[dict[str, Any]] = []
            for item in content:
                if type(item) is TextBlock:
                    if item.text:
                        parts.append({"type": "text", "text": item.text})
                elif isinstance(item, ImageBlock):
                    image = self.image(message, index, item)
                    if image is not None:
                        parts.append(image)
            if parts:
                out["content"] = parts
        if block.is_error:
            out["is_error"] = True
        return out

    def blocks(self, message: Message, assistant: bool) -> list[dict[str, Any]]:
        """The wire blocks of one non-system message; `assistant` is whether its role is ASSISTANT."""
        out: list[dict[str, Any]] = []
        append = out.append
        wire_id = self.wire_id
        raw = message.metadata.provider_raw  # read once: most messages carry none
        extras = call_fields(message) if raw else None  # `caller` ...: replayed to Anthropic alone
        index = -1
        for block in message.content:
            index += 1
            # exact-type dispatch, most frequent first: cheaper than an isinstance chain on the hot path
            if type(block) is TextBlock:
                text = block.text
                if text:
                    if block.citations:
                        append(self.cited_text(message, index, block))
                    else:
                        append({"type": "text", "text": text})
            elif type(block) is ToolUseBlock:
                if assistant:
                    wire = {"type": "tool_use", "id": wire_id(block.id), "name": block.name, "input": block.input}
                    if extras and block.id in extras:
                        wire.update(extras[block.id])
                    append(wire)
            elif type(block) is ToolResultBlock:
                result = block.content
                if len(result) == 1 and type(result[0]) is TextBlock and not block.is_error:  # the usual result
                    text = result[0].text
                    if text:
                        append({"type": "tool_result", "tool_use_id": wire_id(block.tool_use_id),
                                "content": [{"type": "text", "text": text}]})
                    else:
                        append({"type": "tool_result", "tool_use_id": wire_id(block.tool_use_id)})
                else:
                    append(self.tool_result(message, index, block))
            elif isinstance(block, HOSTED_CLASSES):
                if replayable(block, PROVIDER, API):
                    append(block.payload)
                else:
                    told = text_for_other_target(self.drop, message, index, block)
                    if told:
                        append({"type": "text", "text": told})
            elif type(block) is ImageBlock:
                image = self.image(message, index, block)
                if image is not None:
                    append(image)
            elif type(block) is ThinkingBlock:
                if replayable_to(block, PROVIDER, API, self.model_name) or claude_signature_travels(
                        block.origin, self.model_name):
                    append({"type": "thinking", "thinking": block.text, "signature": block.signature or ""})
                else:
                    self.drop(message, index, "thinking", origin_mismatch_reason(block, PROVIDER, API, self.model_name))
            elif type(block) is RedactedThinkingBlock:
                if replayable_to(block, PROVIDER, API, self.model_name) or claude_signature_travels(
                        block.origin, self.model_name):
                    append({"type": "redacted_thinking", "data": redacted_data(block, API)})
                else:
                    self.drop(message, index, "redacted_thinking",
                              origin_mismatch_reason(block, PROVIDER, API, self.model_name))
        if raw:
            cache_control = cache_control_of(message)
            if cache_control is not None and out:
                out[-1] = {**out[-1], CACHE_CONTROL_KEY: cache_control}
        return out


def _system(builder: _Builder, messages: list[Message]) -> str | list[dict[str, Any]] | None:
    blocks: list[dict[str, Any]] = []
    for message in messages:
        texts = [b for b in message.content if isinstance(b, TextBlock) and b.text]
        for index, block in enumerate(message.content):
            if not isinstance(block, TextBlock):
                builder.drop(message, index, block.type, "Anthropic's system prompt holds text only")
        blocks.extend({"type": "text", "text": b.text} for b in texts)
        cache_control = cache_control_of(message)
        if cache_control is not None and texts:
            blocks[-1][CACHE_CONTROL_KEY] = cache_control
    if not blocks:
        return None
    if len(blocks) == 1 and CACHE_CONTROL_KEY not in blocks[0]:
        text: str = blocks[0]["text"]
        return text
    return blocks


def _turns(builder: _Builder, history: list[Message], system_messages: list[Message],
           checked_as: list[Message]) -> list[dict[str, Any]]:
    """The conversation's turns; the system messages met on the way go to `system_messages` (one walk, one
    read of each message's role). A history sent again to this target resumes from what its last request
    kept (history_memo.py): the turns so far, the tool ids they used (which must still go out the same),
    the drops (recorded again) and the JSON of the turns no later message can join, which the body takes
    as it is (encoded_body.py). `checked_as`: the list the caller handed in (see `history_memo.recall`)."""
    wire_id, dropped = builder.wire_id, builder.dropped
    before = len(dropped)
    start, held = resumed_wire(builder.memo, history, wire_id, dropped, checked_as)
    if held is not None:
        sent, last, last_assistant, held_system, json, used, _ = held
        turns = [*sent, last] if last is not None else list(sent)
        system_messages.extend(held_system)
    else:
        sent, json, used, turns, last_assistant = [], b"", None, [], None
    done = len(sent)
    """The turns already as sent (a new message can join the last turn only)."""
    if not start and first_sight(builder.memo, history):
        _more_turns(builder, history, turns, last_assistant, system_messages)
    elif start != len(history):
        if len(turns) > done:
            turns[-1] = {**turns[-1], "content": list(turns[-1]["content"])}  # the held turn stays as it was
        wire_id.collect(used)
        try:
            last_assistant = _more_turns(builder, history[start:] if start else history, turns, last_assistant,
                                         system_messages)
        finally:
            used = wire_id.collected()
        finished = max(len(turns) - 1, done)
        _as_sent(turns, done, finished)
        json = joined(json, items_json(turns[done:finished]))
        done = finished
        held = (turns[:done], turns[done] if len(turns) > done else None, last_assistant, tuple(system_messages),
                json, used, tuple(dropped[before:]))
        keep(builder.memo, history, held, start, checked_as)
    _as_sent(turns, done, len(turns))
    if held is not None:
        builder.encoded.append(EncodedItems("messages", turns, done, json))
    return turns


def _as_sent(turns: list[dict[str, Any]], start: int, end: int) -> None:
    """Turns `start` to `end` in the form they are sent: a user turn of one plain text block (no cache_control)
    as a string. A turn is replaced, never changed: a list of this call's own, whose turns may be held."""
    for index in range(start, end):
        turn = turns[index]
        content = turn["content"]
        if len(content) == 1 and turn["role"] == "user":
            only = content[0]
            if only["type"] == "text" and len(only) == 2:
                turns[index] = {"role": "user", "content": only["text"]}


def _more_turns(
    builder: _Builder,
    history: list[Message],
    turns: list[dict[str, Any]],
    last_assistant: bool | None,
    system_messages: list[Message],
) -> bool | None:
    """Appends the turns of `history` to `turns` (whose last turn may take more blocks); returns whose the
    last turn is."""
    last_blocks: list[dict[str, Any]] = turns[-1]["content"] if turns else []
    blocks_of = builder.blocks
    for message in history:
        role = message.role
        if role is _SYSTEM:
            system_messages.append(message)
            continue
        assistant = role is _ASSISTANT
        blocks = blocks_of(message, assistant)
        if not blocks:
            continue
        if assistant is last_assistant:
            last_blocks.extend(blocks)  # the API wants strictly alternating turns
            continue
        last_assistant, last_blocks = assistant, blocks
        turns.append({"role": "assistant" if assistant else "user", "content": blocks})
    return last_assistant


def _tool_choice(options: AdapterOptions) -> dict[str, Any] | None:
    choice = options.tool_choice
    out: dict[str, Any] | None
    if choice is None:
        out = None
    elif isinstance(choice, dict):
        out = {"type": "tool", "name": choice["name"]}
    elif choice == "required":
        out = {"type": "any"}
    else:
        out = {"type": choice}  # "auto" | "none"
    if options.parallel_tool_calls is False:
        out = {**(out or {"type": "auto"}), "disable_parallel_tool_use": True}
    return out


def _max_tokens(options: AdapterOptions, caps: AdapterCapabilities | None, budget: int | None) -> int:
    if options.max_tokens is not None:
        return options.max_tokens
    if caps is None:
        chosen = DEFAULT_MAX_TOKENS_UNKNOWN_MODEL
        limit = None
    else:
        limit = caps.max_output_tokens
        chosen = min(limit, DEFAULT_MAX_TOKENS_CAP)
    if budget is not None and chosen <= budget:
        # budget_tokens must stay below max_tokens, with room left for the answer itself
        chosen = budget + DEFAULT_MAX_TOKENS_UNKNOWN_MODEL
        if limit is not None:
            chosen = min(chosen, limit)
    return chosen


def _wire_tool(tool: ToolDefinition) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}


_wire_tools: Final = WireToolsMemo(_wire_tool)


def capabilities_or_none(adapter: Adapter, model: str) -> AdapterCapabilities | None:
    try:
        return adapter.capabilities(model)
    except (UnknownModelError, ModelIdError):
        return None


def build_request(
    adapter: Adapter,
    messages: list[Message],
    tools: list[ToolDefinition],
    options: AdapterOptions,
    tool_ids: ToolIdMap | None,
) -> WireRequest:
    caps = capabilities_or_none(adapter, options.model)
    builder = _Builder(options, tool_ids if tool_ids is not None else ToolIdMap(), caps)
    history = repair_history(messages, session_id=options.session_id)
    system_messages: list[Message] = []
    budget = options.thinking_budget_tokens
    if budget is None and options.reasoning_effort is not None and (caps is None or caps.supports_thinking):
        budget = EFFORT_BUDGETS[options.reasoning_effort]

    body: dict[str, Any] = {
        "model": builder.model_name,
        "max_tokens": _max_tokens(options, caps, budget),
        "messages": _turns(builder, history, system_messages, messages),
    }
    system = _system(builder, system_messages)
    if system is not None:
        body["system"] = system
    hosted_defs, betas = hosted_tool_definitions(options.hosted_tools, options.model)
    provider_tools = [*options.provider_tools, *hosted_defs]
    if tools or provider_tools:
        if tools:
            wire_tools, tools_json = _wire_tools(tools)
            builder.encoded.append(EncodedItems("tools", wire_tools, len(wire_tools), tools_json))
            wire_tools.extend(provider_tools)
        else:
            wire_tools = provider_tools
        body["tools"] = wire_tools
        choice = _tool_choice(options)
        if choice is not None:
            body["tool_choice"] = choice
    if options.stop:
        body["stop_sequences"] = list(options.stop)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.top_p is not None:
        body["top_p"] = options.top_p
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    if options.response_format is not None:
        body["output_config"] = {"format": {"type": "json_schema", "schema": options.response_format["schema"]}}
    container = pending_container(history)  # it reads assistant messages only
    if container is not None:
        body["container"] = container
    if options.stream:
        body["stream"] = True
    if options.compact_at_tokens is not None and caps is not None and caps.native_compaction:
        trigger = max(options.compact_at_tokens, NATIVE_COMPACTION_MIN_TRIGGER)
        body["context_management"] = {"edits": [
            {"type": caps.native_compaction, "trigger": {"type": "input_tokens", "value": trigger}}]}
        betas = [*betas, NATIVE_COMPACTION_BETAS.get(caps.native_compaction, "compact-2026-01-12")]
    if options.extra:
        body.update(options.extra)
    headers = {"anthropic-version": API_VERSION}
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    return WireRequest(
        path=PATH,
        body=body,
        stream=options.stream,
        headers=headers,
        dropped=builder.dropped,
        encoded=tuple(builder.encoded),
    )
