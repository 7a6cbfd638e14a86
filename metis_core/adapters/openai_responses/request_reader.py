"""A Responses API request body -> canonical messages, tools and options (gateway inbound, imports).

Everything with a canonical meaning is mapped: instructions -> a leading system message, input items
-> user/assistant/tool/system messages (hosted-tool items -> hosted blocks, client-run shell,
apply_patch and computer items -> tool calls, their outputs -> tool results, annotations ->
citations, an assistant item's phase and logprobs kept), function tools -> ToolDefinitions, other
tool kinds -> `options.provider_tools`, sampling, reasoning and structured-output settings ->
AdapterOptions. Other top-level fields go to `AdapterOptions.extra` verbatim (an absent `include`
is recorded as None, so request.py adds no default), which makes read-then-build reproduce the
request. Shapes that point at server-side state or that no canonical block holds raise
UnreadableWireRequestError naming the field.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import orjson

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.openai_responses import client_tools, hosted
from metis_core.adapters.openai_responses.raw import API, PROVIDER, RAW_KEY, RawRecord, join_summary
from metis_core.adapters.openai_responses.response import reasoning_texts
from metis_core.errors import MalformedResponseError, UnreadableWireRequestError
from metis_core.messages import (
    BlockOrigin,
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

log = logging.getLogger("metis_core.adapters.openai_responses")

EFFORTS = frozenset({"minimal", "low", "medium", "high"})
_MAPPED = frozenset(
    {
        "model",
        "instructions",
        "input",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "max_output_tokens",
        "parallel_tool_calls",
        "reasoning",
        "text",
        "stream",
        "include",
    }
)
_STATEFUL = ("previous_response_id", "conversation")
_MEDIA_BY_EXTENSION = {
    ".png": "image/png",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
}


@dataclass(slots=True)
class ParsedRequest:
    messages: list[Message]
    tools: list[ToolDefinition]
    options: AdapterOptions


def read_request(body: Any, *, tool_ids: ToolIdMap | None = None, session_id: str = "") -> ParsedRequest:
    """Read a `POST /responses` body. Pass the session's ToolIdMap so call ids map back on rebuild."""
    if not isinstance(body, dict):
        raise UnreadableWireRequestError("a Responses API request must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise UnreadableWireRequestError("the request has no `model`; name the model to call")
    for key in _STATEFUL:
        if body.get(key):
            raise UnreadableWireRequestError(
                f"`{key}` points at conversation state stored by OpenAI, which metis cannot see; "
                "send the whole conversation in `input` instead"
            )
    options = _options(body, f"{PROVIDER}:{model}")
    reader = _InputReader(tool_ids if tool_ids is not None else ToolIdMap(), options, session_id)
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        reader.messages.append(Message(role=Role.SYSTEM, session_id=session_id, content=[TextBlock(text=instructions)]))
    raw_input = body.get("input")
    if isinstance(raw_input, str):
        reader.messages.append(Message(role=Role.USER, session_id=session_id, content=[TextBlock(text=raw_input)]))
    elif isinstance(raw_input, list):
        for position, item in enumerate(raw_input):
            reader.item(position, item)
        reader.flush_assistant()
    elif raw_input is not None:
        raise UnreadableWireRequestError("`input` must be a string or a list of items")
    tools: list[ToolDefinition] = []
    for position, tool in enumerate(body.get("tools") or ()):
        if isinstance(tool, dict) and isinstance(tool.get("type"), str) and tool["type"] != "function":
            options.provider_tools.append(tool)  # web_search, file_search, mcp, custom, ...: carried as-is
        else:
            tools.append(_tool(position, tool))
    return ParsedRequest(reader.messages, tools, options)


# --- options and tools ---------------------------------------------------------------------


def _options(body: dict[str, Any], model: str) -> AdapterOptions:
    options = AdapterOptions(model=model)
    options.temperature = body.get("temperature")
    options.top_p = body.get("top_p")
    options.max_tokens = body.get("max_output_tokens")
    options.parallel_tool_calls = body.get("parallel_tool_calls")
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function" and set(choice) == {"type", "name"}:
        options.tool_choice = {"name": choice["name"]}
    elif choice is not None:
        options.tool_choice = choice
    reasoning = body.get("reasoning")
    if isinstance(reasoning, dict):
        effort = reasoning.get("effort")
        if effort in EFFORTS:
            options.reasoning_effort = effort
        if set(reasoning) != {"effort"} or effort not in EFFORTS:
            options.extra["reasoning"] = reasoning
    elif reasoning is not None:
        options.extra["reasoning"] = reasoning
    text = body.get("text")
    if text is not None:
        form = text.get("format") if isinstance(text, dict) else None
        if isinstance(form, dict) and form.get("type") == "json_schema" and isinstance(form.get("schema"), dict):
            options.response_format = {"name": form.get("name") or "response", "schema": form["schema"]}
        if not (
            isinstance(form, dict)
            and set(text) == {"format"}
            and form.get("type") == "json_schema"
            and set(form) <= {"type", "name", "schema", "strict"}
        ):
            options.extra["text"] = text
    stream = body.get("stream")
    if stream is True:
        options.stream = True
    elif stream is not None:
        options.extra["stream"] = stream
    options.extra["include"] = body.get("include")  # None when absent: no default include on rebuild
    for key, value in body.items():
        if key not in _MAPPED:
            options.extra[key] = value
    return options


def _tool(position: int, tool: Any) -> ToolDefinition:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        kind = tool.get("type") if isinstance(tool, dict) else type(tool).__name__
        raise UnreadableWireRequestError(
            f"tools[{position}] is a {kind!r} tool; metis carries only function tools (type: function)"
        )
    parameters = tool.get("parameters") or {"type": "object", "properties": {}}
    return ToolDefinition(name=tool.get("name", ""), description=tool.get("description") or "", input_schema=parameters)


# --- input items ---------------------------------------------------------------------------


@dataclass(slots=True)
class _PendingAssistant:
    blocks: list[Any] = field(default_factory=list)
    record: RawRecord = field(default_factory=RawRecord)


class _InputReader:
    def __init__(self, tool_ids: ToolIdMap, options: AdapterOptions, session_id: str) -> None:
        self.tool_ids = tool_ids
        self.options = options
        self.session_id = session_id
        self.origin = BlockOrigin(provider=PROVIDER, api=API, model=options.model_name)
        self.messages: list[Message] = []
        self.pending = _PendingAssistant()
        self.client_call_ids: dict[str, str] = {}
        """call_id -> canonical id of the client-run calls read so far: their outputs are tool results."""

    def item(self, position: int, item: Any) -> None:
        if not isinstance(item, dict):
            raise UnreadableWireRequestError(f"input[{position}] is not an object")
        kind = item.get("type", "message")
        role = item.get("role")
        if kind == "message" and role == "assistant":
            self._assistant_text(position, item)
        elif kind == "message" and role in ("user", "system", "developer"):
            self.flush_assistant()
            self._message(position, role, item.get("content"))
        elif kind in ("function_call", "custom_tool_call"):
            self._call(position, kind, item)
        elif kind == "reasoning":
            self._reasoning(item)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self.flush_assistant()
            self._output(position, item)
        elif client_tools.is_client_call(item):
            self._client_call(position, item)
        elif kind in client_tools.OUTPUT_KINDS and item.get("call_id") in self.client_call_ids:
            self.flush_assistant()
            self._client_output(position, item)
        elif hosted.is_hosted(kind):
            self.pending.blocks.append(hosted.build_item(dict(item), "", self.origin))
        else:
            raise UnreadableWireRequestError(
                f"input[{position}] is a {kind!r} item; metis reads messages, function/custom tool calls, "
                "their outputs and reasoning items"
                + (
                    " (item references point at state stored by OpenAI; inline the item instead)"
                    if kind == "item_reference"
                    else ""
                )
            )

    def _message(self, position: int, role: str, content: Any) -> None:
        if role == "user":
            blocks = self._parts(position, content)
            self.messages.append(Message(role=Role.USER, session_id=self.session_id, content=blocks))
            return
        text = "".join(b.text for b in self._parts(position, content) if isinstance(b, TextBlock))
        self.messages.append(
            Message(
                role=Role.SYSTEM,
                session_id=self.session_id,
                content=[TextBlock(text=text)],
                metadata=MessageMetadata(provider_raw={RAW_KEY: {"input_role": role}}),
            )
        )

    def _parts(self, position: int, content: Any) -> list[Any]:
        if isinstance(content, str):
            return [TextBlock(text=content)]
        if not isinstance(content, list):
            raise UnreadableWireRequestError(f"input[{position}].content must be a string or a list of parts")
        blocks: list[Any] = []
        for index, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in ("input_text", "output_text"):
                annotations = [a for a in part.get("annotations") or () if isinstance(a, dict)]
                citations = [hosted.citation(a, self.origin) for a in annotations] or None
                blocks.append(TextBlock(text=part.get("text", ""), citations=citations))
            elif kind == "refusal":
                blocks.append(TextBlock(text=part.get("refusal", "")))
            elif kind == "input_image" and isinstance(part.get("image_url"), str):
                blocks.append(_image(part["image_url"]))
            else:
                raise UnreadableWireRequestError(
                    f"input[{position}].content[{index}] is a {kind!r} part; metis reads text and images "
                    "given by URL or data URL (not file ids or files)"
                )
        return blocks

    def _assistant_text(self, position: int, item: dict[str, Any]) -> None:
        """Text parts of an assistant message; its `phase` and each part's `logprobs` are kept to go back."""
        content = item.get("content")
        phase = item.get("phase")
        parts = content if isinstance(content, list) else [None]
        for part, block in zip(parts, self._parts(position, content), strict=True):
            if not isinstance(block, TextBlock):
                continue
            kept: dict[str, Any] = {"phase": phase} if isinstance(phase, str) and phase else {}
            if isinstance(part, dict) and part.get("logprobs"):
                kept["logprobs"] = part["logprobs"]
            if kept:
                ordinal = sum(isinstance(b, TextBlock) for b in self.pending.blocks)
                self.pending.record.text_parts[str(ordinal)] = kept
            self.pending.blocks.append(block)

    def _client_call(self, position: int, item: dict[str, Any]) -> None:
        """A shell, apply_patch or computer call the client ran: the same tool_use an answer gives."""
        try:
            call_id, name, tool_input = client_tools.call_input(item, position)
        except MalformedResponseError as error:
            kind = item.get("type")
            raise UnreadableWireRequestError(f"input[{position}] ({kind}) cannot be read: {error}") from None
        canonical = self.tool_ids.canonical_for(PROVIDER, call_id)
        self.client_call_ids[call_id] = canonical
        self.pending.record.client_calls[canonical] = dict(item)
        self.pending.blocks.append(ToolUseBlock(id=canonical, name=name, input=tool_input))

    def _client_output(self, position: int, item: dict[str, Any]) -> None:
        """Its `*_output`: a tool result (a screenshot as an image), with the item kept to go back verbatim."""
        canonical = self.client_call_ids[str(item.get("call_id"))]
        output = item.get("output")
        content: list[Any]
        if item.get("type") == "computer_call_output":
            url = output.get("image_url") if isinstance(output, dict) else None
            if not isinstance(url, str):
                raise UnreadableWireRequestError(
                    f"input[{position}] (computer_call_output) has no screenshot `image_url`; metis reads "
                    "screenshots given by URL or data URL (not file ids)"
                )
            content = [_image(url)]
        else:
            content = [TextBlock(text=client_tools.output_text(item))]
        failed = item.get("status") == "failed"
        self.messages.append(
            Message(
                role=Role.TOOL,
                session_id=self.session_id,
                content=[ToolResultBlock(tool_use_id=canonical, content=content, is_error=failed)],
                metadata=MessageMetadata(parent_tool_use_id=canonical,
                                         provider_raw={RAW_KEY: {"output_items": {canonical: dict(item)}}}),
            )
        )

    def _call(self, position: int, kind: str, item: dict[str, Any]) -> None:
        call_id, name = item.get("call_id"), item.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            raise UnreadableWireRequestError(f"input[{position}] ({kind}) needs a string call_id and name")
        canonical = self.tool_ids.canonical_for(PROVIDER, call_id)
        record = self.pending.record
        record.add_namespace(canonical, item)
        if kind == "custom_tool_call":
            raw_input = item.get("input")
            self.pending.blocks.append(ToolUseBlock(id=canonical, name=name, input={"input": str(raw_input or "")}))
            record.custom_tool_calls.append(canonical)
            return
        arguments = item.get("arguments") or "{}"
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            raise UnreadableWireRequestError(f"input[{position}].arguments is not a JSON object: {arguments[:120]!r}")
        record.add_arguments(canonical, arguments, parsed)
        self.pending.blocks.append(ToolUseBlock(id=canonical, name=name, input=parsed))

    def _reasoning(self, item: dict[str, Any]) -> None:
        parts, from_content = reasoning_texts(item)
        text = join_summary(parts)
        signature = item.get("encrypted_content")
        signature = signature if isinstance(signature, str) else None
        has_block = bool(text) or signature is not None
        if has_block:
            origin = self.origin if signature is not None else None
            self.pending.blocks.append(ThinkingBlock(text=text, signature=signature, origin=origin))
        else:
            log.warning(
                "reasoning item %s has neither summary nor encrypted_content; it only refers to state "
                "stored by OpenAI and is not kept",
                item.get("id"),
                extra={"session_id": self.session_id},
            )
        self.pending.record.add_reasoning(item.get("id"), has_block, [len(p) for p in parts], from_content)

    def _output(self, position: int, item: dict[str, Any]) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            raise UnreadableWireRequestError(f"input[{position}] ({item.get('type')}) needs a string call_id")
        canonical = self.tool_ids.lookup_canonical(PROVIDER, call_id) or self.tool_ids.canonical_for(PROVIDER, call_id)
        output = item.get("output")
        content = [TextBlock(text=output)] if isinstance(output, str) else self._parts(position, output)
        self.messages.append(
            Message(
                role=Role.TOOL,
                session_id=self.session_id,
                content=[ToolResultBlock(tool_use_id=canonical, content=content)],
                metadata=MessageMetadata(parent_tool_use_id=canonical),
            )
        )

    def flush_assistant(self) -> None:
        pending = self.pending
        if not pending.blocks:
            return
        model = self.options.model
        self.messages.append(
            Message(
                role=Role.ASSISTANT,
                session_id=self.session_id,
                content=pending.blocks,
                metadata=MessageMetadata(
                    model=model,
                    provider=PROVIDER,
                    usage=Usage(),
                    routing=RoutingDecisionRecord(
                        mode=RoutingMode.DEFAULT, chosen_model=model, reason="read from a Responses API request"
                    ),
                    provider_raw=pending.record.as_provider_raw() if _has_raw(pending.record) else None,
                ),
            )
        )
        self.pending = _PendingAssistant()


def _has_raw(record: RawRecord) -> bool:
    return bool(record.reasoning or record.custom_tool_calls or record.arguments or record.namespaces
                or record.callers or record.client_calls or record.text_parts)


def _image(url: str) -> ImageBlock:
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type = header[5:].split(";")[0] or "image/png"
        return ImageBlock(source=ImageSource(kind="base64", data=data), media_type=media_type)
    path = url.split("?")[0].lower()
    media_type = next((m for ext, m in _MEDIA_BY_EXTENSION.items() if path.endswith(ext)), "image/jpeg")
    return ImageBlock(source=ImageSource(kind="url", data=url), media_type=media_type)
