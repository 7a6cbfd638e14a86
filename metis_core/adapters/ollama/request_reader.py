"""An Ollama `/api/chat` request body -> canonical messages, tools and options.

For inbound gateway requests and imports, and the fixture round trips. Ollama tool calls have no
ids, so each gets a positional provider key (`#m<message>.c<call>`) in the ToolIdMap: reading the
same growing history again with the same map gives the same canonical ids. A tool result is paired
with the earliest unanswered call of the same `tool_name`. It does not validate tool inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.ollama.request import API, PROVIDER, think_value
from metis_core.errors import InvalidRequestError
from metis_core.messages import (
    BlockOrigin,
    ContentBlock,
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

_KNOWN_KEYS = frozenset({"model", "messages", "tools", "stream", "format", "options", "think"})
_IMAGE_SIGNATURES = (
    ("iVBORw0KGgo", "image/png"),
    ("/9j/", "image/jpeg"),
    ("R0lGOD", "image/gif"),
    ("UklGR", "image/webp"),
)
_EFFORTS = ("minimal", "low", "medium", "high")


@dataclass(slots=True)
class CanonicalRequest:
    messages: list[Message]
    tools: list[ToolDefinition]
    options: AdapterOptions


def _invalid(problem: str) -> InvalidRequestError:
    return InvalidRequestError(f"not a valid Ollama chat request: {problem}", provider=PROVIDER)


def media_type_of(base64_data: str) -> str:
    """Ollama images carry no media type; the first bytes of the payload tell it."""
    for prefix, media_type in _IMAGE_SIGNATURES:
        if base64_data.startswith(prefix):
            return media_type
    return "application/octet-stream"


class _HistoryReader:
    def __init__(self, model: str, session_id: str, tool_ids: ToolIdMap) -> None:
        self.model = model
        self.session_id = session_id
        self.tool_ids = tool_ids
        self.origin = BlockOrigin(provider=PROVIDER, api=API, model=model)
        self.routing = RoutingDecisionRecord(
            mode=RoutingMode.DEFAULT, chosen_model=f"{PROVIDER}:{model}", reason="read from an Ollama chat request"
        )
        self._unanswered: list[tuple[str, str]] = []  # (canonical id, tool name), oldest first

    def read(self, index: int, wire: Any) -> Message:
        if not isinstance(wire, dict):
            raise _invalid(f"messages[{index}] is not an object")
        role = wire.get("role")
        content = wire.get("content") or ""
        if not isinstance(content, str):
            raise _invalid(f"messages[{index}].content must be a string")
        if role == "assistant":
            return self._assistant(index, wire, content)
        if role == "tool":
            return self._tool_result(index, wire, content)
        if role == "system":
            return Message(role=Role.SYSTEM, session_id=self.session_id, content=[TextBlock(text=content)])
        if role == "user":
            blocks: list[ContentBlock] = [TextBlock(text=content)] if content else []
            blocks.extend(self._images(index, wire))
            return Message(role=Role.USER, session_id=self.session_id, content=blocks or [TextBlock(text="")])
        raise _invalid(f"messages[{index}].role {role!r} is not system, user, assistant or tool")

    def _images(self, index: int, wire: dict[str, Any]) -> list[ImageBlock]:
        images = wire.get("images") or []
        if not isinstance(images, list) or not all(isinstance(i, str) for i in images):
            raise _invalid(f"messages[{index}].images must be a list of base64 strings")
        return [
            ImageBlock(source=ImageSource(kind="base64", data=data), media_type=media_type_of(data)) for data in images
        ]

    def _assistant(self, index: int, wire: dict[str, Any], content: str) -> Message:
        blocks: list[ContentBlock] = []
        thinking = wire.get("thinking")
        if isinstance(thinking, str) and thinking:
            blocks.append(ThinkingBlock(text=thinking, origin=self.origin))
        if content:
            blocks.append(TextBlock(text=content))
        calls = wire.get("tool_calls") or []
        if not isinstance(calls, list):
            raise _invalid(f"messages[{index}].tool_calls must be a list")
        for position, call in enumerate(calls):
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(function, dict) or not isinstance(name, str) or not name:
                raise _invalid(f"messages[{index}].tool_calls[{position}] has no function name")
            arguments = _arguments(function.get("arguments"), f"messages[{index}].tool_calls[{position}]")
            provider_id = call.get("id") if isinstance(call.get("id"), str) else f"#m{index}.c{position}"
            tool_id = self.tool_ids.canonical_for(PROVIDER, provider_id)
            self._unanswered.append((tool_id, name))
            blocks.append(ToolUseBlock(id=tool_id, name=name, input=arguments))
        metadata = MessageMetadata(
            model=f"{PROVIDER}:{self.model}", provider=PROVIDER, routing=self.routing, usage=Usage()
        )
        return Message(
            role=Role.ASSISTANT, session_id=self.session_id, content=blocks or [TextBlock(text="")], metadata=metadata
        )

    def _tool_result(self, index: int, wire: dict[str, Any], content: str) -> Message:
        name = wire.get("tool_name")
        match = next((pos for pos, (_, tool) in enumerate(self._unanswered) if name is None or tool == name), None)
        if match is None:
            raise _invalid(f"messages[{index}] is a result for {name!r} but no earlier tool call is waiting for one")
        tool_id, _ = self._unanswered.pop(match)
        parts: list[TextBlock | ImageBlock] = [TextBlock(text=content)] if content else []
        parts.extend(self._images(index, wire))
        return Message(
            role=Role.TOOL,
            session_id=self.session_id,
            content=[ToolResultBlock(tool_use_id=tool_id, content=parts)],
            metadata=MessageMetadata(parent_tool_use_id=tool_id),
        )


def _arguments(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):  # OpenAI habit; Ollama itself sends an object
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise _invalid(f"{where}.function.arguments is not JSON") from exc
    if not isinstance(value, dict):
        raise _invalid(f"{where}.function.arguments must be a JSON object")
    return value


def _tool(index: int, wire: Any) -> ToolDefinition:
    function = wire.get("function") if isinstance(wire, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise _invalid(f"tools[{index}] has no function name")
    return ToolDefinition(
        name=function["name"],
        description=function.get("description") or "",
        input_schema=function.get("parameters") or {"type": "object", "properties": {}},
    )


def _options(body: dict[str, Any], model: str, session_id: str) -> AdapterOptions:
    options = AdapterOptions(model=f"{PROVIDER}:{model}", stream=body.get("stream", True) is not False)
    options.session_id = session_id
    generation = dict(body.get("options") or {})
    options.temperature = generation.pop("temperature", None)
    options.top_p = generation.pop("top_p", None)
    options.max_tokens = generation.pop("num_predict", None)
    stop = generation.pop("stop", None)
    options.stop = [stop] if isinstance(stop, str) else stop
    if generation:
        options.extra["options"] = generation
    fmt = body.get("format")
    if isinstance(fmt, dict):
        options.response_format = {"name": "response", "schema": fmt}
    elif fmt == "json":
        options.response_format = {"name": "json"}
    elif fmt is not None:
        options.extra["format"] = fmt
    think = body.get("think")
    if think is True or think in _EFFORTS:
        options.reasoning_effort = "medium" if think is True else think
        if think_value(model, options.reasoning_effort) != think:
            options.extra["think"] = think  # keep what the caller asked for exactly
    elif think is not None:
        options.extra["think"] = think
    for key, value in body.items():
        if key not in _KNOWN_KEYS:
            options.extra[key] = value  # keep_alive and friends travel as-is
    return options


def read_chat_request(
    body: dict[str, Any], *, tool_ids: ToolIdMap | None = None, session_id: str = ""
) -> CanonicalRequest:
    """Canonical form of a request body; raises InvalidRequestError naming the first problem."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise _invalid("`model` is missing")
    wire_messages = body.get("messages")
    if not isinstance(wire_messages, list):
        raise _invalid("`messages` must be a list")
    reader = _HistoryReader(model, session_id, tool_ids if tool_ids is not None else ToolIdMap())
    messages = [reader.read(index, wire) for index, wire in enumerate(wire_messages)]
    tools = [_tool(index, wire) for index, wire in enumerate(body.get("tools") or [])]
    return CanonicalRequest(messages=messages, tools=tools, options=_options(body, model, session_id))
