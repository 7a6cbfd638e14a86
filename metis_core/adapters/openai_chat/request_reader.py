"""A Chat Completions request body -> canonical messages, tools and options.

Used for inbound gateway requests and imports, and by the fixture round-trip tests: what it reads,
`ChatRequestBuilder` writes back. Keys it does not map (n, user, seed, an explicit
`"stream": false`, custom grammar tools ...) go to `AdapterOptions.extra` verbatim, which the
builder merges back into the body. Tool-call ids become canonical through the ToolIdMap, so the
builder restores the same provider ids. It does not validate against a model's capabilities.
"""

from __future__ import annotations

import logging
import mimetypes
from dataclasses import dataclass, field
from typing import Any, cast

import orjson

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.openai_chat.request import RAW_ARGUMENTS_KEY, REFUSAL_KEY, WIRE_ROLE_KEY, compact_json
from metis_core.errors import ToolSchemaError
from metis_core.messages import (
    ContentBlock,
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
    Role,
    RoutingMode,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    prechecked,
)
from metis_core.messages.tool_schema import check_portable_subset

log = logging.getLogger("metis_core.adapters.openai_chat")

_EFFORTS = ("minimal", "low", "medium", "high")
_MAPPED_KEYS = frozenset(
    {
        "model", "messages", "tools", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop",
        "tool_choice", "parallel_tool_calls", "reasoning_effort", "response_format", "stream", "stream_options",
    }
)  # fmt: skip


@dataclass
class ChatRequest:
    """What an inbound request asked for, in canonical form."""

    messages: list[Message]
    tools: list[ToolDefinition]
    options: AdapterOptions
    tool_ids: ToolIdMap = field(default_factory=ToolIdMap)


class ChatRequestReader:
    def __init__(self, *, provider: str, tool_ids: ToolIdMap | None = None, session_id: str = "") -> None:
        self.provider = provider
        self.tool_ids = tool_ids if tool_ids is not None else ToolIdMap()
        self.session_id = session_id
        self.model = ""

    def read(self, body: dict[str, Any]) -> ChatRequest:
        self.model = f"{self.provider}:{body['model']}"
        extra: dict[str, Any] = {k: v for k, v in body.items() if k not in _MAPPED_KEYS}
        tools = self.read_tools(body.get("tools") or [], extra)
        options = self.read_options(body, extra)
        messages = [m for m in (self.read_message(raw) for raw in body.get("messages") or []) if m is not None]
        return ChatRequest(messages=messages, tools=tools, options=options, tool_ids=self.tool_ids)

    # --- options -------------------------------------------------------------------------------

    def read_options(self, body: dict[str, Any], extra: dict[str, Any]) -> AdapterOptions:
        options = AdapterOptions(model=self.model, session_id=self.session_id)
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        if isinstance(max_tokens, int):
            options.max_tokens = max_tokens
        options.temperature = body.get("temperature")
        options.top_p = body.get("top_p")
        stop = body.get("stop")
        if stop is not None:
            options.stop = [stop] if isinstance(stop, str) else list(stop)
        choice = body.get("tool_choice")
        if isinstance(choice, str):
            options.tool_choice = choice
        elif isinstance(choice, dict) and choice.get("type") == "function":
            options.tool_choice = {"name": choice["function"]["name"]}
        elif choice is not None:
            extra["tool_choice"] = choice
        options.parallel_tool_calls = body.get("parallel_tool_calls")
        effort = body.get("reasoning_effort")
        if effort in _EFFORTS:
            options.reasoning_effort = effort
        elif effort is not None:
            extra["reasoning_effort"] = effort
        response_format = body.get("response_format")
        if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
            spec = response_format["json_schema"]
            options.response_format = {k: spec[k] for k in ("name", "schema", "strict") if k in spec}
        elif response_format is not None:
            extra["response_format"] = response_format
        stream = body.get("stream")
        if stream is True:
            options.stream = True
            stream_options = body.get("stream_options")
            if stream_options not in (None, {"include_usage": True}):
                extra["stream_options"] = stream_options
        elif stream is not None:
            extra["stream"] = stream  # an explicit `false` is part of what was sent
        options.extra = extra
        return options

    # --- tools ---------------------------------------------------------------------------------

    def read_tools(self, raw_tools: list[dict[str, Any]], extra: dict[str, Any]) -> list[ToolDefinition]:
        tools: list[ToolDefinition] = []
        other: list[dict[str, Any]] = []
        for raw in raw_tools:
            if raw.get("type") != "function":
                other.append(raw)  # custom grammar tools etc. travel verbatim
                continue
            function = raw["function"]
            fields = {
                "name": function["name"],
                "description": function.get("description") or "",
                "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
            }
            try:
                # Checked without normalizing: a schema the caller wrote for this API stays as written.
                check_portable_subset(function["name"], fields["input_schema"])
                tools.append(ToolDefinition(**fields))
            except ToolSchemaError as exc:
                # The caller already chose this schema for its provider; keep it verbatim.
                log.info("keeping tool %s with a schema outside the portable subset: %s", function["name"], exc)
                tools.append(ToolDefinition.model_construct(**fields))
        if other:
            extra["tools"] = other
        return tools

    # --- messages ------------------------------------------------------------------------------

    def read_message(self, raw: dict[str, Any]) -> Message | None:
        role = raw.get("role")
        if role in ("system", "developer"):
            metadata = prechecked.metadata(provider_raw={WIRE_ROLE_KEY: role})
            return self.message(Role.SYSTEM, self.text_blocks(raw.get("content")), metadata)
        if role == "user":
            return self.message(Role.USER, self.user_blocks(raw.get("content")), prechecked.metadata())
        if role == "assistant":
            return self.read_assistant(raw)
        if role == "tool":
            tool_use_id = self.tool_ids.canonical_for(self.provider, raw.get("tool_call_id"))
            result = ToolResultBlock(tool_use_id=tool_use_id, content=self.text_blocks(raw.get("content")))
            return self.message(Role.TOOL, [result], prechecked.metadata(parent_tool_use_id=tool_use_id))
        log.warning("skipping a %r message: no canonical equivalent", role)
        return None

    def message(self, role: Role, content: list[Any], metadata: MessageMetadata) -> Message:
        if prechecked.canonical_blocks(content):  # what this reader builds (a dialect hook may add its own)
            return prechecked.message(role, self.session_id, content, metadata)
        return Message(role=role, session_id=self.session_id, content=content, metadata=metadata)

    @staticmethod
    def text_blocks(content: Any) -> list[ContentBlock]:
        if content is None:
            return []
        if isinstance(content, str):
            return [prechecked.text_block(content)]
        text_block = prechecked.wire_text_block
        return [text_block(p["text"]) for p in content if isinstance(p, dict) and p.get("type") == "text"]

    def user_blocks(self, content: Any) -> list[ContentBlock]:
        if not isinstance(content, list):
            return self.text_blocks(content)
        blocks: list[ContentBlock] = []
        for part in content:
            kind = part.get("type")
            if kind == "text":
                blocks.append(prechecked.wire_text_block(part["text"]))
            elif kind == "image_url":
                blocks.append(image_block(part["image_url"]["url"]))
            else:
                log.warning("skipping a %r content part: no canonical block carries it", kind)
        return blocks

    def read_assistant(self, raw: dict[str, Any]) -> Message:
        content: list[Any] = [*self.reasoning_blocks(raw)]
        provider_raw: dict[str, Any] = {}
        content.extend(self.text_blocks(raw.get("content")))
        if isinstance(raw.get("refusal"), str):
            content.append(prechecked.wire_text_block(raw["refusal"]))
            provider_raw[REFUSAL_KEY] = raw["refusal"]
        for call in raw.get("tool_calls") or ():
            content.append(self.read_tool_call(call, provider_raw))
        self.reasoning_raw(raw, provider_raw)
        metadata = prechecked.metadata(
            model=self.model,
            provider=self.provider,
            routing=prechecked.routing_record(RoutingMode.DEFAULT, self.model, "read from an inbound chat request"),
            usage=Usage(),
            provider_raw=provider_raw or None,
        )
        if not content:
            content.append(prechecked.text_block(""))
        return self.message(Role.ASSISTANT, content, metadata)

    def read_tool_call(self, call: dict[str, Any], provider_raw: dict[str, Any]) -> ToolUseBlock:
        tool_id = self.tool_ids.canonical_for(self.provider, call.get("id"))
        if call.get("type") == "custom":
            provider_raw.setdefault("custom_tool_calls", []).append(tool_id)
            custom = call["custom"]
            return ToolUseBlock(id=tool_id, name=custom["name"], input={"input": custom.get("input", "")})
        function = call["function"]
        arguments = function.get("arguments") or "{}"
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            log.warning("tool call %s has arguments that are not a JSON object; reading them as {}", call.get("id"))
            parsed = {}
        if compact_json(parsed) != arguments:
            provider_raw.setdefault(RAW_ARGUMENTS_KEY, {})[tool_id] = arguments
        name = function["name"]
        if type(name) is str and type(parsed) is dict:
            return prechecked.tool_use_block(tool_id, name, parsed)
        return ToolUseBlock(id=tool_id, name=name, input=cast(dict[str, Any], parsed))

    # --- dialect hooks -------------------------------------------------------------------------

    def reasoning_blocks(self, raw: dict[str, Any]) -> list[ContentBlock]:
        """Thinking carried by an assistant message; plain OpenAI chat carries none."""
        return []

    def reasoning_raw(self, raw: dict[str, Any], provider_raw: dict[str, Any]) -> None:
        """Opaque reasoning data to keep for replay; plain OpenAI chat has none."""


def image_block(url: str) -> ImageBlock:
    """A `data:` URL becomes a base64 image; anything else stays a URL the provider fetches."""
    if url.startswith("data:") and ";base64," in url:
        header, _, data = url.partition(";base64,")
        return ImageBlock(source=ImageSource(kind="base64", data=data), media_type=header[5:] or "image/png")
    guessed = mimetypes.guess_type(url.split("?", 1)[0])[0]
    return ImageBlock(source=ImageSource(kind="url", data=url), media_type=guessed or "image/*")
