"""Responses API hosted-tool items, compaction and annotations <-> canonical blocks.

Hosted-tool items (web and file search, code interpreter, image generation, MCP, hosted shell, tool
search, programmatic tool calling's `program`) become `ProviderToolCallBlock`s, their separate outputs and listings
`ProviderToolResultBlock`s, `compaction` a `CompactionBlock`; each keeps the item exactly as sent
(replayed verbatim) and a text rendering. Annotations on output text become citations.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters._common.hosted import hosted_wire, readable
from metis_core.errors import CapabilityMismatchError
from metis_core.messages import (
    BlockOrigin,
    Citation,
    CompactionBlock,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
)

CALL_ITEMS = frozenset({
    "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call",
    "mcp_approval_request", "local_shell_call", "shell_call", "apply_patch_call", "tool_search_call",
    "computer_call", "program",
})
"""Items of work the provider did (or asks its own tool runtime to do): never client function calls."""
OUTPUT_ITEMS = frozenset({
    "mcp_list_tools", "mcp_approval_response", "local_shell_call_output", "shell_call_output",
    "apply_patch_call_output", "tool_search_output", "computer_call_output", "program_output",
})
COMPACTION_ITEM = "compaction"


def is_hosted(kind: Any) -> bool:
    return kind in CALL_ITEMS or kind in OUTPUT_ITEMS or kind == COMPACTION_ITEM


def build_item(payload: dict[str, Any], fragments: str, origin: BlockOrigin) -> Any:
    """The canonical block for one whole hosted item."""
    kind = str(payload.get("type"))
    if kind == COMPACTION_ITEM:
        summary = payload.get("summary")
        return CompactionBlock(text=summary if isinstance(summary, str) else "", payload=payload, origin=origin)
    body = readable({k: v for k, v in payload.items() if k != "status"})
    label = kind
    name = payload.get("name")
    server = payload.get("server_label")
    if isinstance(name, str) and name:
        label = f"{kind} {server}/{name}" if isinstance(server, str) else f"{kind} {name}"
    if kind in OUTPUT_ITEMS:
        call_id = payload.get("call_id") or payload.get("approval_request_id") or payload.get("id") or ""
        return ProviderToolResultBlock(
            tool_use_id=str(call_id),
            name=kind,
            text=f"[hosted tool result: {label}]\n{body}" if body else "",
            is_error=bool(payload.get("error")),
            payload=payload,
            origin=origin,
        )
    arguments = payload.get("arguments") if isinstance(payload.get("arguments"), dict) else None
    action = payload.get("action") if isinstance(payload.get("action"), dict) else None
    tool_input = arguments or action or {}
    return ProviderToolCallBlock(
        id=str(payload.get("id") or payload.get("call_id") or ""),
        name=kind,
        input=tool_input,
        text=f"[hosted tool call: {label}]\n{body}",
        payload=payload,
        origin=origin,
    )


def citation(annotation: dict[str, Any], origin: BlockOrigin) -> Citation:
    url, title = annotation.get("url"), annotation.get("title") or annotation.get("filename")
    return Citation(
        url=url if isinstance(url, str) else None,
        title=title if isinstance(title, str) else None,
        payload=annotation,
        origin=origin,
    )


HOSTED_TOOL_WIRE: dict[str, dict[str, Any]] = {
    "web_search": {"type": "web_search"},
    "file_search": {"type": "file_search"},
}
"""Canonical hosted-tool name -> Responses tool definition (file_search needs `vector_store_ids`)."""


def hosted_tool_definitions(wanted: dict[str, dict[str, Any]], model: str) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for name, settings in wanted.items():
        base = hosted_wire(HOSTED_TOOL_WIRE, name, model, "the Responses adapter enables")
        definition = {**base, **settings}
        if name == "file_search" and not definition.get("vector_store_ids"):
            raise CapabilityMismatchError(
                model,
                "hosted tool file_search",
                "file_search needs settings {vector_store_ids: [...]} naming your vector stores",
            )
        tools.append(definition)
    return tools
