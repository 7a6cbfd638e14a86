"""Canonical messages, tools and options -> a Responses API request body (`POST /responses`).

Stateless by design, so every request works with `store: false`: the whole conversation is sent,
never `previous_response_id`, item ids or item references; reasoning is replayed from its
`encrypted_content`, only to the exact origin that issued it, and always followed by the item it
produced. What the API cannot carry is dropped through the lossy-projection log. It does not parse
responses (response.py) or read wire requests back (request_reader.py).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from metis_core.adapters._common.hosted import (
    HOSTED_CLASSES,
    cited,
    note_foreign_citations,
    replayable,
    text_for_other_target,
)
from metis_core.adapters._common.lossy import DroppedBlock, record_block_drop
from metis_core.adapters._common.repair import repair_history
from metis_core.adapters._common.replay import origin_mismatch_reason, replayable_to
from metis_core.adapters._common.strict_schema import is_strict_compatible
from metis_core.adapters._common.tool_ids import RequestToolIds, ToolIdMap
from metis_core.adapters.base import AdapterOptions, WireRequest
from metis_core.adapters.openai_responses import client_tools
from metis_core.adapters.openai_responses.hosted import hosted_tool_definitions
from metis_core.adapters.openai_responses.raw import (
    API,
    PROVIDER,
    SUMMARY_SEPARATOR,
    responses_raw,
    split_summary,
)
from metis_core.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.messages.blocks import is_block
from metis_core.models.capabilities import AdapterCapabilities

log = logging.getLogger("metis_core.adapters.openai_responses")

# bound once: a `Role.X` lookup costs ~750 instructions on Python 3.11, and these run per message
_SYSTEM, _USER, _ASSISTANT = Role.SYSTEM, Role.USER, Role.ASSISTANT
PATH = "/responses"
ENCRYPTED_REASONING = "reasoning.encrypted_content"
_NEVER_SENT = ("previous_response_id", "conversation")
"""Server-side state references: metis holds the conversation itself and never sends these."""

_warned_once: set[str] = set()


def build_request(
    messages: list[Message],
    tools: list[ToolDefinition],
    options: AdapterOptions,
    tool_ids: ToolIdMap,
    capabilities: AdapterCapabilities,
) -> WireRequest:
    history = repair_history(messages, session_id=options.session_id)
    dropped: list[DroppedBlock] = []
    writer = _InputWriter(tool_ids, options.model_name, options.session_id, capabilities, dropped)
    instructions, items = writer.write(history)
    body: dict[str, Any] = {"model": options.model_name}
    if instructions is not None:
        body["instructions"] = instructions
    body["input"] = _compact_input(items)
    wire_tools = [
        *(tool_param(tool) for tool in tools),
        *options.provider_tools,
        *hosted_tool_definitions(options.hosted_tools, options.model),
    ]
    if wire_tools:
        body["tools"] = wire_tools
    _add_options(body, options, capabilities)
    return WireRequest(path=PATH, body=body, stream=options.stream, dropped=dropped)


def _compact_input(items: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A lone user text message goes as the bare-string form the SDKs send; anything else as items."""
    if len(items) == 1:
        only = items[0]
        if only.get("role") == "user" and isinstance(only.get("content"), str):
            text: str = only["content"]
            return text
    return items


# --- tools and options ---------------------------------------------------------------------


def tool_param(tool: ToolDefinition) -> dict[str, Any]:
    """A function tool; `strict` is on exactly when the schema already meets strict mode's rules."""
    param: dict[str, Any] = {
        "type": "function",
        "name": tool.name,
        "parameters": tool.input_schema,
        "strict": is_strict_compatible(tool.input_schema),
    }
    if tool.description:
        param["description"] = tool.description
    return param


def _add_options(body: dict[str, Any], options: AdapterOptions, capabilities: AdapterCapabilities) -> None:
    if options.tool_choice is not None:
        body["tool_choice"] = tool_choice_param(options.tool_choice)
    if options.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = options.parallel_tool_calls
    if options.max_tokens is not None:
        body["max_output_tokens"] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.top_p is not None:
        body["top_p"] = options.top_p
    if options.stop:
        _warn_once("stop", "the Responses API has no stop sequences; AdapterOptions.stop is ignored")
    effort = options.reasoning_effort or effort_for_budget(options.thinking_budget_tokens)
    if effort is not None:
        body["reasoning"] = {"effort": effort}
    if effort is not None or capabilities.supports_thinking:
        body["include"] = [ENCRYPTED_REASONING]  # without it, reasoning cannot be replayed statelessly
    if options.response_format is not None:
        schema = options.response_format.get("schema", {})
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": options.response_format.get("name") or "response",
                "schema": schema,
                "strict": is_strict_compatible(schema),
            }
        }
    if options.compact_at_tokens is not None and capabilities.native_compaction == "compaction":
        body["context_management"] = [{"type": "compaction", "compact_threshold": options.compact_at_tokens}]
    if options.stream:
        body["stream"] = True
    for key, value in options.extra.items():
        if key in _NEVER_SENT:
            _warn_once(key, f"{key} points at server-side state; metis sends the whole conversation instead")
        elif value is None:
            body.pop(key, None)  # an explicit None switches a default off (e.g. include)
        else:
            body[key] = value


def tool_choice_param(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    if isinstance(choice, dict) and set(choice) == {"name"}:
        return {"type": "function", "name": choice["name"]}
    return choice


def effort_for_budget(budget: int | None) -> str | None:
    """An Anthropic-style thinking budget expressed as the nearest Responses effort."""
    if budget is None:
        return None
    if budget <= 2_048:
        return "low"
    return "medium" if budget <= 16_384 else "high"


def _warn_once(key: str, message: str) -> None:
    if key not in _warned_once:
        _warned_once.add(key)
        log.warning(message, extra={"adapter": PROVIDER})


# --- input items ---------------------------------------------------------------------------


ADAPTER_NAME = f"{PROVIDER}/responses"


def _summary_parts_by_block(raw: dict[str, Any]) -> dict[int, Any]:
    """Summary part lengths recorded per thinking block (see raw.py), keyed by block ordinal; a dict
    `{content_parts}` where the block's text was the item's reasoning_text content."""
    return {
        entry["block"]: {"content_parts": entry["content_parts"]} if "content_parts" in entry
        else entry.get("summary_parts")
        for entry in raw.get("reasoning") or ()
        if isinstance(entry, dict) and entry.get("block") is not None
    }


class _Recorded:
    """What provider_raw recorded of one assistant message for its replay (raw.py); most messages
    carry none and share `_NOTHING_RECORDED`. Read-only."""

    __slots__ = ("arguments", "callers", "client", "custom", "namespaces", "summary_parts", "text_parts")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.custom: list[str] = raw.get("custom_tool_calls") or []
        self.arguments: dict[str, str] = raw.get("arguments") or {}
        self.client: dict[str, dict[str, Any]] = {**(raw.get("shell_calls") or {}), **(raw.get("client_calls") or {})}
        self.summary_parts = _summary_parts_by_block(raw)
        self.namespaces: dict[str, str] = raw.get("namespaces") or {}
        self.callers: dict[str, dict[str, Any]] = raw.get("callers") or {}
        self.text_parts: dict[str, dict[str, Any]] = raw.get("text_parts") or {}


_NOTHING_RECORDED = _Recorded({})
_NOTHING_KEPT: dict[str, Any] = {}


class _InputWriter:
    """Walks a repaired history once, emitting input items and recording every drop."""

    def __init__(
        self,
        tool_ids: ToolIdMap,
        model: str,
        session_id: str,
        capabilities: AdapterCapabilities,
        dropped: list[DroppedBlock],
    ) -> None:
        self.wire_id = RequestToolIds(tool_ids, PROVIDER, "openai")
        """Canonical id -> call_id, each looked up once: a call and its output share it."""
        self.model = model
        self.session_id = session_id
        self.capabilities = capabilities
        self.dropped = dropped
        self.custom_calls: set[str] = set()
        """Canonical ids of custom (grammar) tool calls: their results go back as custom outputs."""
        self.client_calls: dict[str, dict[str, Any]] = {}
        """Canonical id -> client-run item: its result goes back as that item's *_output."""
        self.callers: dict[str, dict[str, Any]] = {}
        """Canonical id -> the program that made a function call: its output goes back with that caller."""
        self.unanswerable: set[str] = set()
        """call_ids of computer calls answered without a screenshot: neither goes out (the API takes no such pair)."""

    def drop(self, message: Message, index: int, block_type: str, reason: str) -> None:
        record_block_drop(self.dropped, ADAPTER_NAME, self.session_id, message, index, block_type, reason)

    def write(self, history: list[Message]) -> tuple[str | None, list[dict[str, Any]]]:
        items: list[dict[str, Any]] = []
        instructions: list[str] | None = None
        leading = True
        for message in history:
            role = message.role
            if role is _SYSTEM:
                input_role = responses_raw(message).get("input_role")
                if leading and input_role is None:
                    instructions = [*(instructions or []), message.text()]
                else:
                    items.append({"role": input_role or "system", "content": message.text()})
                continue
            leading = False
            if role is _USER:
                user = self._user(message)
                if user is not None:
                    items.append(user)
            elif role is _ASSISTANT:
                items.extend(self._assistant(message))
            else:
                items.extend(self._tool_outputs(message))
        if self.unanswerable:
            items = _without_unanswerable(items, self.unanswerable)
        return (SUMMARY_SEPARATOR.join(instructions) if instructions is not None else None), items

    def _user(self, message: Message) -> dict[str, Any] | None:
        blocks = message.content
        first = blocks[0] if len(blocks) == 1 else None
        if is_block(first, TextBlock):
            return {"role": "user", "content": first.text}
        parts = self._parts(message, blocks, None)
        return {"role": "user", "content": parts} if parts else None

    def _parts(self, message: Message, blocks: list[Any], result_index: int | None) -> list[dict[str, Any]]:
        """input_text / input_image parts. Drops are logged against the block's own index in a user
        message, or against the tool_result block (`result_index`) for images inside a result."""
        parts: list[dict[str, Any]] = []
        for index, block in enumerate(blocks):
            if is_block(block, TextBlock):
                parts.append({"type": "input_text", "text": block.text})
            elif isinstance(block, ImageBlock):
                image = self._image(message, index if result_index is None else result_index, block)
                if image is not None:
                    parts.append(image)
        return parts

    def _image(self, message: Message, index: int, block: ImageBlock) -> dict[str, Any] | None:
        caps = self.capabilities
        kind = block.source.kind
        if kind == "file_ref":
            self.drop(
                message,
                index,
                "image",
                "file_ref image reached the adapter unresolved; the caller must inline workspace images before to_wire",
            )
            return None
        if not caps.supports_images:
            self.drop(message, index, "image", f"{self.model} does not accept images")
            return None
        if (
            kind == "base64"
            and caps.accepted_image_media_types
            and block.media_type not in caps.accepted_image_media_types
        ):
            self.drop(message, index, "image", f"{self.model} does not accept {block.media_type} images")
            return None
        url = block.source.data if kind == "url" else f"data:{block.media_type};base64,{block.source.data}"
        return {"type": "input_image", "image_url": url, "detail": "auto"}

    def _assistant(self, message: Message) -> list[dict[str, Any]]:
        raw = responses_raw(message)
        recorded = _Recorded(raw) if raw else _NOTHING_RECORDED
        text_parts = recorded.text_parts
        out: list[dict[str, Any]] = []
        reasoning_at: list[tuple[int, int]] = []  # (position in out, content index)
        text_run: list[str] = []
        run_kept = _NOTHING_KEPT
        thinking_seen = text_seen = 0
        for index, block in enumerate(message.content):
            if is_block(block, TextBlock):
                kept = text_parts.get(str(text_seen), _NOTHING_KEPT) if text_parts else _NOTHING_KEPT
                text_seen += 1
                citations = block.citations
                if text_run and (citations or kept != run_kept
                                 or "logprobs" in run_kept):  # a part's logprobs belong to its text alone
                    out.append(_assistant_text("".join(text_run), run_kept))
                    text_run = []
                if citations:
                    out.append(self._cited_text(message, index, block, kept))
                else:
                    text_run.append(block.text)
                    run_kept = kept
                continue
            if text_run:
                out.append(_assistant_text("".join(text_run), run_kept))
                text_run = []
            if is_block(block, ToolUseBlock):
                out.append(self._call(block, recorded))
            elif isinstance(block, HOSTED_CLASSES):
                if replayable(block, PROVIDER, API):
                    out.append(block.payload)  # this API's own item, exactly as it sent it
                else:
                    text = text_for_other_target(self.drop, message, index, block)
                    if text:  # its own assistant item, so it never runs into the answer's text
                        out.append({"role": "assistant", "content": text})
            elif isinstance(block, ThinkingBlock):
                item = self._reasoning(message, index, block, recorded.summary_parts.get(thinking_seen))
                thinking_seen += 1
                if item is not None:
                    reasoning_at.append((len(out), index))
                    out.append(item)
            elif isinstance(block, RedactedThinkingBlock):
                self.drop(
                    message,
                    index,
                    "redacted_thinking",
                    "redacted thinking is an Anthropic token the Responses API cannot carry",
                )
        if text_run:
            out.append(_assistant_text("".join(text_run), run_kept))
        # The API rejects a reasoning item sent without the item that followed it
        # (error__400_reasoning_item_without_following_item.json), so a trailing one is dropped.
        for position, index in reversed(reasoning_at) if reasoning_at else ():
            if position + 1 >= len(out):
                del out[position]
                self.drop(
                    message,
                    index,
                    "thinking",
                    "reasoning item would be sent without the output item "
                    "that followed it, which the Responses API rejects",
                )
        return out

    def _cited_text(self, message: Message, index: int, block: TextBlock, kept: dict[str, Any]) -> dict[str, Any]:
        """Text with this API's annotations goes back as an output message; others' are left out."""
        annotations = cited(block, PROVIDER, API)
        if len(annotations) != len(block.citations or ()):
            note_foreign_citations(self.drop, message, index, block)
        return _assistant_text(block.text, kept, annotations)

    def _call(self, block: ToolUseBlock, recorded: _Recorded) -> dict[str, Any]:
        """A client tool call: the client-run item it was, a custom (grammar) call, or a function call."""
        block_id = block.id
        if block_id in recorded.client:
            self.client_calls[block_id] = recorded.client[block_id]
            return recorded.client[block_id]  # the client-run item exactly as it was sent
        call_id = self.wire_id(block_id)
        value = block.input
        call: dict[str, Any]
        if block_id in recorded.custom and len(value) == 1 and isinstance(value.get("input"), str):
            self.custom_calls.add(block_id)
            call = {"type": "custom_tool_call", "call_id": call_id, "name": block.name, "input": value["input"]}
        else:
            original = recorded.arguments.get(block_id)
            if original is None or not _same_json(original, value):
                original = orjson.dumps(value).decode()
            call = {"type": "function_call", "call_id": call_id, "name": block.name, "arguments": original}
        if block_id in recorded.namespaces:
            call["namespace"] = recorded.namespaces[block_id]
        if block_id in recorded.callers:  # a program's call: its output names the same caller
            call["caller"] = self.callers[block_id] = recorded.callers[block_id]
        return call

    def _reasoning(
        self, message: Message, index: int, block: ThinkingBlock, part_lengths: Any
    ) -> dict[str, Any] | None:
        if block.signature is None:
            self.drop(
                message,
                index,
                "thinking",
                "reasoning has no encrypted_content; without it the item "
                "could only be replayed by id, which store:false forbids",
            )
            return None
        if not replayable_to(block, PROVIDER, API, self.model):
            self.drop(message, index, "thinking", origin_mismatch_reason(block, PROVIDER, API, self.model))
            return None
        if isinstance(part_lengths, dict):  # the text was the item's reasoning_text content, not a summary
            content = [{"type": "reasoning_text", "text": part}
                       for part in split_summary(block.text, part_lengths["content_parts"])]
            return {"type": "reasoning", "summary": [], "content": content, "encrypted_content": block.signature}
        summary = [{"type": "summary_text", "text": part} for part in split_summary(block.text, part_lengths)]
        return {"type": "reasoning", "summary": summary, "encrypted_content": block.signature}

    def _tool_outputs(self, message: Message) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for index, block in enumerate(message.content):
            if type(block) is not ToolResultBlock and not isinstance(block, ToolResultBlock):
                continue
            use_id = block.tool_use_id
            call_id = self.wire_id(use_id)
            parts = block.content
            output: str | list[dict[str, Any]]
            first = parts[0] if len(parts) == 1 else None
            if is_block(first, TextBlock):
                output = first.text
            elif any(isinstance(part, ImageBlock) for part in parts):
                output = self._parts(message, list(parts), index)
            else:
                output = block.text()
            client_call = self.client_calls.get(use_id)
            if client_call is not None:
                out.extend(self._client_output(message, index, block, client_call, call_id))
                continue
            kind = "custom_tool_call_output" if use_id in self.custom_calls else "function_call_output"
            item: dict[str, Any] = {"type": kind, "call_id": call_id, "output": output}
            if use_id in self.callers:
                item["caller"] = self.callers[use_id]
            out.append(item)
        return out

    def _client_output(self, message: Message, index: int, block: ToolResultBlock, call: dict[str, Any],
                       call_id: str) -> list[dict[str, Any]]:
        """The output item for a client-run call: the one read from a request verbatim, else built."""
        replayed_id = str(call.get("call_id") or call_id)
        kept = responses_raw(message).get("output_items") or {}
        given = kept.get(block.tool_use_id)
        if isinstance(given, dict) and given.get("call_id") == replayed_id:
            return [given]
        item = client_tools.output_item(call, replayed_id, block)
        if item is None:
            self.unanswerable.add(replayed_id)
            self.drop(message, index, "tool_result", "a computer call must be answered with a screenshot "
                      "(an image block in its tool result); the call and this result are left out")
            return []
        return [item]


def _without_unanswerable(items: list[dict[str, Any]], unanswerable: set[str]) -> list[dict[str, Any]]:
    return [item for item in items if not (item.get("type") == "computer_call" and item.get("call_id") in unanswerable)]


def _same_json(text: str, value: dict[str, Any]) -> bool:
    try:
        return bool(orjson.loads(text) == value)
    except orjson.JSONDecodeError:
        return False


def _assistant_text(text: str, kept: dict[str, Any], annotations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Assistant text as input: the short form, or an output message when it has annotations,
    `logprobs`, or the `phase` (commentary / final answer) the model gave it, which the API wants back."""
    if not annotations and not kept:
        return {"role": "assistant", "content": text}
    part: dict[str, Any] = {"type": "output_text", "text": text, "annotations": annotations or []}
    if "logprobs" in kept:
        part["logprobs"] = kept["logprobs"]
    item: dict[str, Any] = {"type": "message", "role": "assistant", "content": [part]}
    if "phase" in kept:
        item["phase"] = kept["phase"]
    return item
