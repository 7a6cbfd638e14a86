"""Anthropic's server tools, MCP connector blocks, compaction and citations <-> canonical blocks.

`server_tool_use` / `mcp_tool_use` become `ProviderToolCallBlock`s, every `*_tool_result` a
`ProviderToolResultBlock`, `compaction` a `CompactionBlock`; each keeps the block exactly as
Anthropic sent it (replayed verbatim) and a text rendering for other providers. Nothing here is
ever a client `tool_use`, so no agent tries to run a server tool.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from metis_core.adapters._common.hosted import compact_json, hosted_wire, readable
from metis_core.messages import (
    BlockOrigin,
    Citation,
    CompactionBlock,
    Message,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
    Role,
)

CALL_TYPES = frozenset({"server_tool_use", "mcp_tool_use"})
TOOL_USE_EXTRAS = "tool_use_extras"
"""provider_raw key: fields of a client tool_use beyond id/name/input (`caller` of programmatic calls)."""


_TOOL_USE_FIELDS: Final = frozenset({"type", "id", "name", "input"})
_TOOL_USE_FIELDS_AND_CALLER: Final = _TOOL_USE_FIELDS | {"caller"}
_DIRECT_CALLER: Final = {"type": "direct"}


def tool_use_extras(block: dict[str, Any]) -> dict[str, Any]:
    """Fields of a client tool_use beyond id, name and input; a `direct` caller is the default and
    streams alone echo it, so it is left out (a stream and a body then give the same message)."""
    if block.keys() <= _TOOL_USE_FIELDS_AND_CALLER and block.get("caller", _DIRECT_CALLER) == _DIRECT_CALLER:
        return {}  # the usual block: nothing beyond them but a direct caller (checked without a comprehension)
    extras = {k: v for k, v in block.items() if k not in _TOOL_USE_FIELDS}
    if extras.get("caller") == _DIRECT_CALLER:
        del extras["caller"]
    return extras


def is_call(kind: str) -> bool:
    return kind in CALL_TYPES


def is_result(kind: str) -> bool:
    return kind.endswith("_tool_result") and kind != "tool_result"


def build_call(payload: dict[str, Any], fragments: str, origin: BlockOrigin) -> ProviderToolCallBlock:
    """The call block; a streamed call's input arrives as JSON fragments and replaces `{}`."""
    tool_input = payload.get("input")
    if fragments.strip():
        try:
            parsed = orjson.loads(fragments)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            tool_input = parsed
            payload["input"] = parsed
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    name = str(payload.get("name") or payload.get("type") or "server_tool")
    server = payload.get("server_name")
    label = f"{server}/{name}" if isinstance(server, str) else name
    text = f"[hosted tool call: {label}]\n{readable(tool_input) or compact_json(tool_input)}"
    return ProviderToolCallBlock(
        id=str(payload.get("id") or ""), name=name, input=tool_input, text=text, payload=payload, origin=origin
    )


def build_result(payload: dict[str, Any], fragments: str, origin: BlockOrigin) -> ProviderToolResultBlock:
    kind = str(payload.get("type"))
    content = payload.get("content")
    error = isinstance(content, dict) and str(content.get("type", "")).endswith("_error")
    is_error = bool(payload.get("is_error")) or error
    body = readable(content)
    text = f"[hosted tool result: {kind}{' (error)' if is_error else ''}]\n{body}" if body else ""
    return ProviderToolResultBlock(
        tool_use_id=str(payload.get("tool_use_id") or ""),
        name=kind,
        text=text,
        is_error=is_error,
        payload=payload,
        origin=origin,
    )


def build_compaction(payload: dict[str, Any], fragments: str, origin: BlockOrigin) -> CompactionBlock:
    """Streamed compaction content arrives in `compaction_delta`s after a start with `content: null`."""
    if fragments:
        payload["content"] = (payload.get("content") or "") + fragments
    content = payload.get("content")
    return CompactionBlock(text=content if isinstance(content, str) else "", payload=payload, origin=origin)


def citation(wire: dict[str, Any], origin: BlockOrigin) -> Citation:
    def text(key: str) -> str | None:
        value = wire.get(key)
        return value if isinstance(value, str) else None

    return Citation(
        url=text("url"),
        title=text("title") or text("document_title"),
        cited_text=text("cited_text"),
        payload=wire,
        origin=origin,
    )


HOSTED_TOOL_WIRE: dict[str, tuple[dict[str, Any], str | None]] = {
    "web_search": ({"type": "web_search_20250305", "name": "web_search"}, None),
    "web_fetch": ({"type": "web_fetch_20250910", "name": "web_fetch"}, "web-fetch-2025-09-10"),
    "code_execution": ({"type": "code_execution_20250825", "name": "code_execution"}, "code-execution-2025-08-25"),
}
"""Canonical hosted-tool name -> (Anthropic server tool definition, beta header it needs)."""


def hosted_tool_definitions(
    wanted: dict[str, dict[str, Any]], model: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Wire definitions and beta flags for `AdapterOptions.hosted_tools`."""
    tools: list[dict[str, Any]] = []
    betas: list[str] = []
    for name, settings in wanted.items():
        entry = hosted_wire(HOSTED_TOOL_WIRE, name, model, "Anthropic hosts")
        tools.append({**entry[0], **settings})
        if entry[1] is not None:
            betas.append(entry[1])
    return tools, betas


def call_fields(message: Message) -> dict[str, dict[str, Any]]:
    """canonical tool-use id -> the fields Anthropic put on that client tool_use beyond id, name and input
    (`caller`), for an answer written back in Anthropic's shape; empty for another provider's answer."""
    raw = message.metadata.provider_raw
    extras = raw.get(TOOL_USE_EXTRAS) if raw and message.metadata.provider == "anthropic" else None
    return extras if isinstance(extras, dict) else {}


def answer_container(message: Message) -> dict[str, Any] | None:
    """The code-execution container an Anthropic answer named (`{id, expires_at}`): a client resuming a
    programmatic tool call must send its id back as `container`."""
    raw = message.metadata.provider_raw
    container = raw.get("container") if raw and message.metadata.provider == "anthropic" else None
    return container if isinstance(container, dict) else None


def answer_stop_details(message: Message) -> dict[str, Any] | None:
    """Why a Claude answer stopped, as the provider said (`stop_details`, e.g. a refusal's category and
    explanation): a client reading Messages gets it as it came."""
    raw = message.metadata.provider_raw
    details = raw.get("stop_details") if raw else None
    return details if isinstance(details, dict) else None


def pending_container(history: list[Message]) -> str | None:
    """The code-execution container a request must name: Anthropic refuses results for tool calls
    made from code execution (programmatic tool calling) unless `container` names the one they ran in."""
    for message in reversed(history):
        if message.role is not Role.ASSISTANT:
            continue
        if message.metadata.provider != "anthropic" or not message.metadata.provider_raw:
            return None
        programmatic = any(isinstance(e, dict) and isinstance(e.get("caller"), dict)
                           for e in call_fields(message).values())
        container = answer_container(message)
        container_id = container.get("id") if container is not None else None
        return container_id if programmatic and isinstance(container_id, str) else None
    return None
