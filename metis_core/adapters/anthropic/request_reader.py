"""An Anthropic Messages request body -> canonical messages, tools and options.

Used for inbound gateway requests, imports, and the fixture round trips that prove `to_wire`
rebuilds what a real client sent. Tool ids are registered in the ToolIdMap so they map back to
the same provider ids; thinking blocks get the request's model as their origin (that is who
signed them, or the API would reject the request). Server tool blocks, compaction and citations
become hosted blocks bound to that origin; `caller` on tool_use and cache breakpoints are kept on
message metadata; server tool definitions are carried as `options.provider_tools`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Final

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic import hosted
from metis_core.adapters.anthropic.request import CACHE_CONTROL_KEY, PROVIDER
from metis_core.adapters.base import AdapterOptions
from metis_core.errors import InvalidRequestError
from metis_core.messages import (
    BlockOrigin,
    ContentBlock,
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
    RedactedThinkingBlock,
    Role,
    RoutingMode,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    prechecked,
)

_KNOWN_KEYS: Final = frozenset({
    "model", "max_tokens", "messages", "system", "tools", "tool_choice", "stop_sequences", "temperature",
    "top_p", "thinking", "output_config", "stream",
})


@dataclass(slots=True)
class ReadRequest:
    messages: list[Message]
    tools: list[ToolDefinition]
    options: AdapterOptions
    skipped: list[str] = field(default_factory=list)
    """Wire block types that have no canonical form and were left out."""


def _bad(message: str) -> InvalidRequestError:
    return InvalidRequestError(message, provider=PROVIDER, status=400)


def _cache_metadata(block: dict[str, Any], **extra: Any) -> MessageMetadata:
    control = block.get(CACHE_CONTROL_KEY)
    raw = {PROVIDER: {CACHE_CONTROL_KEY: control}} if control is not None else None
    return prechecked.metadata(provider_raw=raw, **extra)


class _Reader:
    def __init__(self, body: dict[str, Any], tool_ids: ToolIdMap, session_id: str) -> None:
        self.model_name = str(body["model"])
        self.model = f"{PROVIDER}:{self.model_name}"
        self.tool_ids = tool_ids
        self.session_id = session_id
        self.skipped: list[str] = []

    @functools.cached_property
    def origin(self) -> BlockOrigin:
        """The origin of every signed or hosted block read from this request (made on first use: most
        requests hold none)."""
        return BlockOrigin(provider=PROVIDER, api="messages", model=self.model_name)

    def message(self, role: Role, content: list[Any], metadata: MessageMetadata | None = None) -> Message:
        """A read message (content: canonical blocks this reader built), checked as the constructor checks it."""
        return prechecked.message(role, self.session_id, content,
                                  prechecked.default_metadata() if metadata is None else metadata)

    def assistant(self, content: list[Any], provider_raw: dict[str, Any] | None) -> Message:
        routing = prechecked.routing_record(RoutingMode.DEFAULT, self.model, "read from an Anthropic request")
        fields: dict[str, Any] = {} if provider_raw is None else {"provider_raw": provider_raw}
        metadata = prechecked.metadata(**fields, model=self.model, provider=PROVIDER, routing=routing, usage=Usage())
        return self.message(Role.ASSISTANT, content, metadata)

    def image(self, block: dict[str, Any]) -> ImageBlock:
        source = block.get("source") or {}
        if source.get("type") == "base64":
            return ImageBlock(source=ImageSource(kind="base64", data=source["data"]), media_type=source["media_type"])
        if source.get("type") == "url":
            url = source["url"]
            guess = "image/png" if url.lower().endswith(".png") else "image/jpeg"
            return ImageBlock(source=ImageSource(kind="url", data=url), media_type=guess)
        raise _bad(f"image source type {source.get('type')!r} is not supported; send base64 or url")

    def tool_result(self, block: dict[str, Any]) -> Message:
        canonical_id = self.tool_ids.canonical_for(PROVIDER, block["tool_use_id"])
        raw = block.get("content")
        parts: list[TextBlock | ImageBlock] = []
        if isinstance(raw, str):
            parts.append(prechecked.text_block(raw))
        elif isinstance(raw, list):
            for item in raw:
                if item.get("type") == "text":
                    parts.append(prechecked.wire_text_block(item["text"]))
                elif item.get("type") == "image":
                    parts.append(self.image(item))
                else:
                    self.skipped.append(str(item.get("type")))
        result = ToolResultBlock(tool_use_id=canonical_id, content=parts, is_error=bool(block.get("is_error")))
        return self.message(Role.TOOL, [result], _cache_metadata(block, parent_tool_use_id=canonical_id))

    def user_turn(self, content: Any) -> list[Message]:
        if isinstance(content, str):
            return [self.message(Role.USER, [prechecked.text_block(content)])]
        out: list[Message] = []
        pending: list[ContentBlock] = []
        for block in content:
            kind = block.get("type")
            if kind == "tool_result":
                out.append(self.tool_result(block))
            elif kind == "text":
                pending.append(prechecked.wire_text_block(block["text"]))
            elif kind == "image":
                pending.append(self.image(block))
            else:
                self.skipped.append(str(kind))
            if CACHE_CONTROL_KEY in block and kind != "tool_result" and pending:
                out.append(self.message(Role.USER, pending, _cache_metadata(block)))
                pending = []
        if pending:
            out.append(self.message(Role.USER, pending))
        return out

    def assistant_turn(self, content: Any) -> Message:
        if isinstance(content, str):
            return self.assistant([prechecked.text_block(content)], None)
        blocks: list[ContentBlock] = []
        extras: dict[str, Any] = {}
        for block in content:
            kind = str(block.get("type"))
            if kind == "text":
                wire_citations = block.get("citations") or ()
                citations = [hosted.citation(c, self.origin) for c in wire_citations if isinstance(c, dict)]
                blocks.append(TextBlock(text=block["text"], citations=citations or None))
            elif kind == "tool_use":
                canonical_id = self.tool_ids.canonical_for(PROVIDER, block["id"])
                blocks.append(ToolUseBlock(id=canonical_id, name=block["name"], input=block.get("input") or {}))
                block_extras = hosted.tool_use_extras(block)
                if block_extras:
                    extras[canonical_id] = block_extras
            elif hosted.is_call(kind):
                blocks.append(hosted.build_call(dict(block), "", self.origin))
            elif hosted.is_result(kind):
                blocks.append(hosted.build_result(dict(block), "", self.origin))
            elif kind == "compaction":
                blocks.append(hosted.build_compaction(dict(block), "", self.origin))
            elif kind == "thinking":
                blocks.append(ThinkingBlock(text=block.get("thinking") or "", signature=block.get("signature"),
                                            origin=self.origin))
            elif kind == "redacted_thinking":
                blocks.append(RedactedThinkingBlock(data=block["data"], origin=self.origin))
            else:
                self.skipped.append(kind)
        return self.assistant(blocks, {hosted.TOOL_USE_EXTRAS: extras} if extras else None)

    def system(self, system: Any) -> list[Message]:
        if isinstance(system, str):
            return [self.message(Role.SYSTEM, [prechecked.text_block(system)])]
        return [
            self.message(Role.SYSTEM, [prechecked.wire_text_block(block["text"])], _cache_metadata(block))
            for block in system
            if block.get("type") == "text"
        ]


def _options(body: dict[str, Any], model: str, session_id: str,
             provider_tools: list[dict[str, Any]]) -> AdapterOptions:
    """The body's options, read in the order the fields' checks run (so a body with several malformed
    fields fails on the same one whichever way it is read); `thinking`, `tool_choice` and `output_config`
    are looked into only when present (most requests hold none of them)."""
    max_tokens, temperature, top_p = body.get("max_tokens"), body.get("temperature"), body.get("top_p")
    stop = list(body["stop_sequences"]) if body.get("stop_sequences") else None
    stream = bool(body.get("stream"))
    extra = {} if body.keys() <= _KNOWN_KEYS else {k: v for k, v in body.items() if k not in _KNOWN_KEYS}
    thinking_budget = None
    thinking = body.get("thinking")
    if thinking and thinking.get("type") == "enabled":
        thinking_budget = thinking.get("budget_tokens")
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    choice = body.get("tool_choice")
    if choice:
        kind = choice.get("type")
        if kind == "tool":
            tool_choice = {"name": choice["name"]}
        elif kind == "any":
            tool_choice = "required"
        elif kind in ("auto", "none"):
            tool_choice = kind
        if choice.get("disable_parallel_tool_use"):
            parallel_tool_calls = False
    response_format = None
    output_config = body.get("output_config")
    if output_config:
        output_format = output_config.get("format")
        if isinstance(output_format, dict) and output_format.get("type") == "json_schema":
            response_format = {"name": "output", "schema": output_format["schema"]}
    return AdapterOptions(
        model=model, max_tokens=max_tokens, temperature=temperature, top_p=top_p, stop=stop,
        thinking_budget_tokens=thinking_budget, tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls,
        response_format=response_format, stream=stream, session_id=session_id, provider_tools=provider_tools,
        extra=extra,
    )


def read_request(body: dict[str, Any], *, tool_ids: ToolIdMap | None = None, session_id: str = "") -> ReadRequest:
    """Canonical form of a Messages request body. Raises InvalidRequestError on a malformed one."""
    if not isinstance(body, dict) or "model" not in body or not isinstance(body.get("messages"), list):
        raise _bad("a Messages request needs `model` and a `messages` list")
    reader = _Reader(body, tool_ids if tool_ids is not None else ToolIdMap(), session_id)
    messages: list[Message] = []
    if body.get("system"):
        messages.extend(reader.system(body["system"]))
    for turn in body["messages"]:
        role = turn.get("role")
        if role == "user":
            messages.extend(reader.user_turn(turn.get("content")))
        elif role == "assistant":
            messages.append(reader.assistant_turn(turn.get("content")))
        else:
            raise _bad(f"message role {role!r} is not one of user, assistant")
    tools: list[ToolDefinition] = []
    provider_tools: list[dict[str, Any]] = []
    for position, tool in enumerate(body.get("tools") or ()):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise _bad(f"tools[{position}] needs a `name`")
        if tool.get("type", "custom") == "custom" and "input_schema" in tool:
            tools.append(ToolDefinition(name=tool["name"], description=tool.get("description") or "",
                                        input_schema=tool["input_schema"]))
        elif "type" in tool:
            provider_tools.append(tool)  # a server tool (web_search_20250305, code_execution_...): carried as-is
        else:
            raise _bad(f"tools[{position}] ({tool['name']}) has neither `input_schema` nor a server tool `type`")
    return ReadRequest(messages, tools, _options(body, reader.model, session_id, provider_tools), reader.skipped)
