"""Canonical messages, tools and options -> a Chat Completions request body.

Builds plain dicts straight from the block attributes (no model_dump, no deep copies): this runs
on every turn. Dialects (OpenRouter, generic OpenAI-compatible servers) subclass
`ChatRequestBuilder` and override the small hooks (`reasoning_options`, `replay_thinking`); they
do not copy it. It does not add auth headers (the transport does) and does not read capabilities
itself (the adapter passes them in).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson

from metis_core.adapters._common.encoded_body import EncodedItems, items_json, joined
from metis_core.adapters._common.history_memo import HistoryMemo, Identity, first_sight, keep, resumed_wire
from metis_core.adapters._common.hosted import HOSTED_CLASSES, note_foreign_citations, text_for_other_target
from metis_core.adapters._common.lossy import DroppedBlock, record_block_drop
from metis_core.adapters._common.per_tool_cache import WireToolsMemo
from metis_core.adapters._common.repair import repair_history
from metis_core.adapters._common.tool_ids import IdStyle, RequestToolIds, ToolIdMap, UsedIds
from metis_core.adapters.base import AdapterOptions
from metis_core.errors import SessionInvariantError
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
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.models.model_id import parse_model_id

if TYPE_CHECKING:
    from metis_core.messages import ToolDefinition

log = logging.getLogger("metis_core.adapters.openai_chat")

WIRE_ROLE_KEY = "wire_role"
"""provider_raw key on a SYSTEM message: the role ("system" | "developer") it arrived with."""
RAW_ARGUMENTS_KEY = "tool_arguments"
"""provider_raw key on an ASSISTANT message: {canonical id: arguments string exactly as issued}."""
CUSTOM_CALLS_KEY = "custom_tool_calls"
"""provider_raw key: canonical ids of calls that were `type: "custom"` (free-text grammar tools)."""
REFUSAL_KEY = "refusal"
"""provider_raw key on an ASSISTANT message: the text the model sent in its `refusal` field."""

_TOOL, _ASSISTANT, _USER = Role.TOOL, Role.ASSISTANT, Role.USER
"""Bound once: on Python 3.11 each `Role.X` lookup costs as much as building a small dict, per message."""

TOOL_IMAGE_NOTE = "[the image output of this tool call follows in the next user message]"

_HeldWire = tuple[list[dict[str, Any]], frozenset[str], tuple[dict[str, Any], ...], bytes, UsedIds,
                  tuple[DroppedBlock, ...]]
"""At the end of a history: its wire messages, the calls and images pending, the messages' JSON, the tool ids
used, the drops."""
_histories: HistoryMemo[_HeldWire] = HistoryMemo()


def compact_json(value: Any) -> str:
    """The one serialization of tool arguments: compact, key order as stored, so replays are stable."""
    return orjson.dumps(value).decode()


def text_content(texts: list[str]) -> str | list[dict[str, Any]]:
    """One text block travels as a string, several as text parts (what every chat server accepts)."""
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts]


def merge_extra(body: dict[str, Any], extra: dict[str, Any]) -> None:
    """AdapterOptions.extra into the body: dicts merge key-wise, lists append, anything else replaces."""
    for key, value in extra.items():
        current = body.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            body[key] = {**value, **current}
        elif isinstance(current, list) and isinstance(value, list):
            body[key] = current + value
        else:
            body[key] = value


class ChatRequestBuilder:
    """One request build: holds the target's rules and the list of lossy drops made on the way."""

    api = "chat_completions"
    default_id_style: IdStyle = "openai"
    """Tool-id rule when the model's capabilities do not ask for "alnum9"."""
    thinking_drop_reason = (
        "Chat Completions cannot carry thinking blocks (OpenAI reasoning is replayable only through the Responses API)"
    )

    def __init__(
        self,
        *,
        provider: str,
        capabilities: AdapterCapabilities,
        options: AdapterOptions,
        tool_ids: ToolIdMap,
        adapter_name: str,
    ) -> None:
        self.namespace = parse_model_id(options.model).provider
        self.provider = provider
        self.model_name = options.model_name
        self.caps = capabilities
        self.options = options
        self.tool_ids = tool_ids
        self.adapter_name = adapter_name
        self.session_id = options.session_id
        self.id_style: IdStyle = "alnum9" if capabilities.tool_id_style == "alnum9" else self.default_id_style
        self.dropped: list[DroppedBlock] = []
        self.encoded: list[EncodedItems] = []
        """The body's lists whose JSON is known (the history's messages, the tools)."""
        self.wire_id = RequestToolIds(tool_ids, self.namespace, self.id_style)
        self.memo = _histories.table(
            (type(self), provider, adapter_name, options.model, self.session_id, self.id_style, Identity(capabilities))
        )
        """This target's held histories: the context is everything a message's mapping reads beyond it."""

    # --- the body ----------------------------------------------------------------------------

    def build(self, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        options = self.options
        body: dict[str, Any] = {"model": self.model_name, "messages": self.wire_messages(messages)}
        if tools and self.caps.supports_tools:
            wire_tools, tools_json = _wire_tools(tools)
            body["tools"] = wire_tools
            self.encoded.append(EncodedItems("tools", wire_tools, len(wire_tools), tools_json))
        elif tools:
            log.warning("model %s declares no tool support; %d tool(s) not sent", options.model, len(tools))
        has_tools = "tools" in body or "tools" in options.extra
        if options.max_tokens is not None:
            body[self.caps.max_tokens_field] = options.max_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.stop:
            body["stop"] = list(options.stop)
        if options.tool_choice is not None and has_tools:
            body["tool_choice"] = self.wire_tool_choice(options.tool_choice)
        if options.parallel_tool_calls is not None and has_tools:
            body["parallel_tool_calls"] = options.parallel_tool_calls
        self.reasoning_options(body)
        if options.response_format is not None:
            body["response_format"] = self.wire_response_format(options.response_format)
        if options.stream:
            body["stream"] = True
            if self.caps.supports_stream_usage:
                body["stream_options"] = {"include_usage": True}
        if options.extra:
            merge_extra(body, options.extra)
        return body

    def reasoning_options(self, body: dict[str, Any]) -> None:
        """OpenAI takes a top-level `reasoning_effort`; a thinking budget has no chat equivalent."""
        if self.options.reasoning_effort is not None:
            body["reasoning_effort"] = self.options.reasoning_effort
        if self.options.thinking_budget_tokens is not None:
            log.debug("thinking_budget_tokens is not a Chat Completions option; not sent")

    @staticmethod
    def wire_tool(tool: ToolDefinition) -> dict[str, Any]:
        function: dict[str, Any] = {"name": tool.name}
        if tool.description:
            function["description"] = tool.description
        function["parameters"] = tool.input_schema
        return {"type": "function", "function": function}

    @staticmethod
    def wire_tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
        if isinstance(choice, str):
            return choice
        if "name" in choice and "type" not in choice:
            return {"type": "function", "function": {"name": choice["name"]}}
        return choice

    @staticmethod
    def wire_response_format(spec: dict[str, Any]) -> dict[str, Any]:
        if "type" in spec:  # already a wire response_format (json_object, or a full json_schema)
            return spec
        schema: dict[str, Any] = {"name": spec.get("name", "response"), "schema": spec["schema"]}
        if "strict" in spec:
            schema["strict"] = spec["strict"]
        return {"type": "json_schema", "json_schema": schema}

    # --- messages ----------------------------------------------------------------------------

    def wire_messages(self, messages: list[Message]) -> list[dict[str, Any]]:
        """The history's wire messages. A history sent again to this target resumes from what its last
        request kept (history_memo.py): the wire messages so far, the calls and images still pending,
        the tool ids they used (which must still go out the same) and the drops (recorded again), and the JSON
        of those messages, which the body takes as it is (encoded_body.py)."""
        history = repair_history(messages, session_id=self.session_id)
        wire_id, dropped = self.wire_id, self.dropped
        before = len(dropped)
        start, held = resumed_wire(self.memo, history, wire_id, dropped, checked_as=messages)
        if held is not None:
            held_out, held_calls, held_images, json, used, _ = held
            out, pending_calls, pending_images = list(held_out), set(held_calls), list(held_images)
        else:
            json, used, out, pending_calls, pending_images = b"", None, [], set(), []
        if not start and first_sight(self.memo, history):
            self.wire_history(history, out, pending_calls, pending_images)
        elif start != len(history):
            count = len(out)
            wire_id.collect(used)
            try:
                self.wire_history(history[start:] if start else history, out, pending_calls, pending_images)
            finally:
                used = wire_id.collected()
            json = joined(json, items_json(out[count:]))
            held = (list(out), frozenset(pending_calls), tuple(pending_images), json, used, tuple(dropped[before:]))
            keep(self.memo, history, held, start, checked_as=messages)
        if held is not None:
            self.encoded.append(EncodedItems("messages", out, len(held[0]), json))
        if pending_images:
            out.append({"role": "user", "content": pending_images})
        return out

    def wire_history(
        self,
        history: list[Message],
        out: list[dict[str, Any]],
        pending_calls: set[str],
        pending_images: list[dict[str, Any]],
    ) -> None:
        """Appends the wire messages of `history` to `out`, from the pending calls and images before it."""
        for message in history:
            role = message.role
            if role is _TOOL:
                out.append(self.wire_tool_result(message, out, pending_calls, pending_images))
                continue
            if pending_calls:
                raise SessionInvariantError(
                    "chat request", [f"tool call(s) {sorted(pending_calls)} not answered before {role.value} message"]
                )
            if pending_images:
                out.append({"role": "user", "content": list(pending_images)})
                pending_images.clear()
            if role is _ASSISTANT:
                wire = self.wire_assistant(message)
                if wire is not None:
                    out.append(wire)
                    calls = wire.get("tool_calls")
                    if calls:
                        pending_calls.update([call["id"] for call in calls])  # it is empty here
            elif role is _USER:
                wire = self.wire_user(message)
                if wire is not None:
                    out.append(wire)
            else:
                wire = self.wire_system(message)
                if wire is not None:
                    out.append(wire)

    def system_role(self, message: Message) -> str:
        """`developer` only where the model takes it; a role recorded on the way in is kept there."""
        if not self.caps.supports_developer_role:
            return "system"
        raw = message.metadata.provider_raw
        recorded = raw.get(WIRE_ROLE_KEY) if raw else None
        return recorded if recorded in ("system", "developer") else "developer"

    def wire_system(self, message: Message) -> dict[str, Any] | None:
        texts = [b.text for b in message.content if isinstance(b, TextBlock)]
        if not texts:
            return None
        return {"role": self.system_role(message), "content": text_content(texts)}

    def wire_user(self, message: Message) -> dict[str, Any] | None:
        blocks = message.content
        if len(blocks) == 1 and type(blocks[0]) is TextBlock:  # the usual user turn: one text
            return {"role": "user", "content": blocks[0].text}
        parts: list[dict[str, Any]] = []
        for index, block in enumerate(blocks):
            if isinstance(block, TextBlock):
                parts.append({"type": "text", "text": block.text})
            elif isinstance(block, ImageBlock):
                part = self.image_part(message, index, block)
                if part is not None:
                    parts.append(part)
            else:
                self.drop(message, index, block.type, f"a user message cannot carry a {block.type} block")
        if not parts:
            return None
        if len(parts) == 1 and parts[0]["type"] == "text":
            return {"role": "user", "content": parts[0]["text"]}
        return {"role": "user", "content": parts}

    def image_part(self, message: Message, index: int, block: ImageBlock) -> dict[str, Any] | None:
        source = block.source
        if not self.caps.supports_images:
            self.drop(message, index, "image", f"model {self.model_name} does not accept images")
            return None
        if source.kind == "file_ref":
            self.drop(message, index, "image", "file_ref images must be resolved to base64 before to_wire")
            return None
        if source.kind == "url":
            return {"type": "image_url", "image_url": {"url": source.data}}
        accepted = self.caps.accepted_image_media_types
        if accepted and block.media_type not in accepted:
            self.drop(message, index, "image", f"{block.media_type} is not among the accepted types {accepted}")
            return None
        return {"type": "image_url", "image_url": {"url": f"data:{block.media_type};base64,{source.data}"}}

    def wire_assistant(self, message: Message) -> dict[str, Any] | None:
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        thinking: list[tuple[int, ThinkingBlock | RedactedThinkingBlock]] = []
        raw = message.metadata.provider_raw
        same_provider = raw is not None and message.metadata.provider == self.namespace
        refused = raw.get(REFUSAL_KEY) if raw is not None and same_provider else None
        refusal: str | None = None
        index = -1
        for block in message.content:
            index += 1
            if type(block) is ToolUseBlock:  # the exact class first: the usual call costs one check
                calls.append(self.wire_tool_call(block, raw if same_provider else None))
            elif isinstance(block, TextBlock):
                said = block.text
                if refusal is None and refused and said == refused:
                    refusal = said  # back in the field it came in, not as the answer's content
                    continue
                texts.append(said)
                if block.citations:
                    self.citations(message, index, block)
            elif isinstance(block, ToolUseBlock):
                calls.append(self.wire_tool_call(block, raw if same_provider else None))
            elif isinstance(block, ThinkingBlock | RedactedThinkingBlock):
                thinking.append((index, block))
            elif isinstance(block, HOSTED_CLASSES):
                text = text_for_other_target(self.drop, message, index, block)  # never a tool call
                if text:
                    texts.append(text)
            else:
                self.drop(message, index, block.type, f"an assistant message cannot carry a {block.type} block")
        wire: dict[str, Any] = {"role": "assistant"}
        if thinking:
            self.replay_thinking(message, thinking, wire)
        if not texts and not calls and refusal is None and len(wire) == 1:
            return None
        wire["content"] = (texts[0] if len(texts) == 1 else text_content(texts)) if texts else None
        if refusal is not None:
            wire["refusal"] = refusal
        if calls:
            wire["tool_calls"] = calls
        return wire

    def citations(self, message: Message, index: int, block: TextBlock) -> None:
        """A text block's citations never travel in a request: each drop is logged, with the reason."""
        citations = block.citations or ()
        if citations and all(c.origin is not None and c.origin.same_api(self.namespace, self.api) for c in citations):
            self.drop(message, index, "citations", "Chat Completions takes no annotations in a request; "
                      "the text is sent without its own url_citations")
        else:
            note_foreign_citations(self.drop, message, index, block)

    def replay_thinking(
        self,
        message: Message,
        blocks: list[tuple[int, ThinkingBlock | RedactedThinkingBlock]],
        wire: dict[str, Any],
    ) -> None:
        """Chat Completions has no field for thinking: every such block is dropped and logged."""
        for index, block in blocks:
            self.drop(message, index, block.type, self.thinking_drop_reason)

    def wire_tool_call(self, block: ToolUseBlock, raw: dict[str, Any] | None) -> dict[str, Any]:
        call_id = self.wire_id(block.id)
        if raw is not None:
            if block.id in raw.get(CUSTOM_CALLS_KEY, ()):
                text = block.input.get("input")
                if isinstance(text, str):
                    return {"id": call_id, "type": "custom", "custom": {"name": block.name, "input": text}}
            issued = raw.get(RAW_ARGUMENTS_KEY, {}).get(block.id)
            if issued is not None and _same_json(issued, block.input):
                return {"id": call_id, "type": "function", "function": {"name": block.name, "arguments": issued}}
        arguments = compact_json(block.input)
        return {"id": call_id, "type": "function", "function": {"name": block.name, "arguments": arguments}}

    def wire_tool_result(
        self,
        message: Message,
        out: list[dict[str, Any]],
        pending_calls: set[str],
        pending_images: list[dict[str, Any]],
    ) -> dict[str, Any]:
        result = message.content[0]
        if not isinstance(result, ToolResultBlock):
            raise SessionInvariantError("chat request", [f"tool message {message.id} holds no tool_result"])
        call_id = self.wire_id(result.tool_use_id)
        if call_id not in pending_calls or not out or out[-1]["role"] not in ("assistant", "tool"):
            raise SessionInvariantError(
                "chat request", [f"tool result {result.tool_use_id} does not follow the call that asked for it"]
            )
        pending_calls.discard(call_id)
        parts = result.content
        if len(parts) == 1 and type(parts[0]) is TextBlock:  # the usual result: one text
            return {"role": "tool", "tool_call_id": call_id, "content": parts[0].text}
        texts: list[str] = []
        images: list[dict[str, Any]] = []
        for block in parts:
            if isinstance(block, TextBlock):
                texts.append(block.text)
            else:
                part = self.image_part(message, 0, block)
                if part is not None:
                    images.append(part)
        if images:
            # Tool messages take text only: the images travel in a user message placed right
            # after the last tool message of this turn (never between a call and its results).
            pending_images.append({"type": "text", "text": f"Image output of tool call {call_id}:"})
            pending_images.extend(images)
            if not texts:
                texts.append(TOOL_IMAGE_NOTE)
        return {"role": "tool", "tool_call_id": call_id, "content": "\n".join(texts)}

    # --- lossy projections -------------------------------------------------------------------

    def drop(self, message: Message, index: int, block_type: str, reason: str) -> None:
        record_block_drop(self.dropped, self.adapter_name, self.session_id, message, index, block_type, reason)


def _same_json(issued: str, value: dict[str, Any]) -> bool:
    try:
        return bool(orjson.loads(issued) == value)
    except orjson.JSONDecodeError:
        return False


_wire_tools = WireToolsMemo(ChatRequestBuilder.wire_tool)
"""Every Chat Completions mapping writes a tool the same way: one memo for them all."""
