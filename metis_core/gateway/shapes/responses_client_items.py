"""What a Responses upstream made, answered to a Responses client in the same form: client-run calls as
their item types, and the `phase` and `logprobs` of its text.

A call the Responses upstream made as a `shell_call`, `local_shell_call`, `apply_patch_call`,
`computer_call` or `custom_tool_call` goes to the client as that item (the upstream's own item, kept
in the answer's provider_raw), not as a `function_call`, so the client runs it with its own tool and
answers with the matching `*_output` item. Calls of any other upstream stay function calls. Text keeps
its message item's `phase` and its part's `logprobs` (kept by text block in provider_raw).
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters.openai_responses.client_tools import CALL_TOOLS
from metis_core.adapters.openai_responses.raw import responses_raw
from metis_core.gateway.shapes.base import InboundRequest
from metis_core.ids import new_ulid
from metis_core.messages import Message, TextBlock

_CLIENT_TOOL_TYPES = {"shell": "run_command", "local_shell": "run_command", "apply_patch": "apply_patch",
                      "computer": "computer", "computer_use_preview": "computer"}


def client_item(message: Message, canonical_id: str, call_id: str, name: str,
                tool_input: dict[str, Any]) -> dict[str, Any] | None:
    """The upstream's item for a client-run call of `message`, under the client's call_id; None for a
    function call."""
    raw = responses_raw(message)
    kept = {**(raw.get("shell_calls") or {}), **(raw.get("client_calls") or {})}.get(canonical_id)
    if isinstance(kept, dict) and kept.get("type") in CALL_TOOLS:
        item = {**kept, "call_id": call_id}
        item.setdefault("id", f"{_ID_PREFIX.get(str(kept['type']), 'ct')}_{new_ulid()}")
        item.setdefault("status", "completed")
        return item
    if canonical_id in (raw.get("custom_tool_calls") or ()):
        text = tool_input.get("input")
        return {"type": "custom_tool_call", "id": f"ctc_{new_ulid()}", "call_id": call_id, "name": name,
                "input": text if isinstance(text, str) else "", "status": "completed"}
    return None


_ID_PREFIX = {"shell_call": "sh", "local_shell_call": "lsh", "apply_patch_call": "apc", "computer_call": "cu"}


def held_tool_names(request: InboundRequest) -> frozenset[str]:
    """Names a streamed call may turn out to be a client-run item under: its item type is known only
    once the answer is complete, so such calls are written then. A function tool's name is never held."""
    names: set[str] = set()
    for tool in request.options.provider_tools:
        kind = tool.get("type")
        if kind == "custom" and isinstance(tool.get("name"), str):
            names.add(tool["name"])
        elif kind in _CLIENT_TOOL_TYPES:
            names.add(_CLIENT_TOOL_TYPES[kind])
    return frozenset(names - {tool.name for tool in request.tools})


def kept_text_parts(message: Message) -> dict[int, dict[str, Any]]:
    """Content index of each text block -> the `phase` / `logprobs` its Responses item and part had."""
    parts = responses_raw(message).get("text_parts") or {}
    if not parts:
        return {}
    kept: dict[int, dict[str, Any]] = {}
    ordinal = 0
    for index, block in enumerate(message.content):
        if isinstance(block, TextBlock):
            found = parts.get(str(ordinal))
            if isinstance(found, dict):
                kept[index] = found
            ordinal += 1
    return kept


def with_text_parts(item: dict[str, Any], kept: list[dict[str, Any]]) -> dict[str, Any]:
    """A message item with the phase its blocks share (none when they differ, as a stream may join
    items) and their logprobs in order; the item unchanged when they carry neither."""
    phases = {part.get("phase") for part in kept}
    logprobs = [entry for part in kept for entry in part.get("logprobs") or ()]
    if phases == {None} and not logprobs:
        return item
    item = {**item, "content": [dict(part) for part in item["content"]]}
    if len(phases) == 1 and None not in phases:
        item["phase"] = phases.pop()
    if logprobs and item["content"]:
        item["content"][0]["logprobs"] = logprobs
    return item
