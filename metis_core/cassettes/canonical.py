"""The canonical request a cassette is keyed by, its stable hash, and what differs between two of them.

A canonical request is plain JSON: the model id, the messages (role and content only, tool-call
ids renumbered by order of appearance so ULIDs and provider ids do not change the key), the tools
(name, description, schema) and the options that shape the answer. It never holds wire bytes,
headers or secrets; the wire request is stored beside it in the cassette entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from metis_core.hashing import json_hash
from metis_core.messages import Message, ToolDefinition

if TYPE_CHECKING:
    from metis_core.adapters.base import AdapterOptions

VOLATILE_OPTIONS = frozenset({"model", "session_id"})
"""Options that never change what a model answers: the model is keyed on its own, the session id is a label."""


def _renumbered(value: Any, ids: dict[str, str]) -> Any:
    """Tool-call ids replaced by `call_<n>` in order of first appearance, everywhere in a block."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            is_call_id = key in ("id", "tool_use_id") and value.get("type") in ("tool_use", "tool_result")
            if is_call_id and isinstance(item, str):
                out[key] = ids.setdefault(item, f"call_{len(ids) + 1}")
            else:
                out[key] = _renumbered(item, ids)
        return out
    if isinstance(value, list):
        return [_renumbered(item, ids) for item in value]
    return value


def canonical_request(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    options: dict[str, Any] | None,
) -> dict[str, Any]:
    """The JSON the cassette key is computed from (see the module docstring)."""
    ids: dict[str, str] = {}
    wanted = {k: v for k, v in (options or {}).items() if k not in VOLATILE_OPTIONS and v not in (None, {}, [])}
    return {
        "model": model,
        "messages": [
            {"role": str(m.role), "content": _renumbered([b.model_dump(mode="json") for b in m.content], ids)}
            for m in messages
        ],
        "tools": [t.model_dump(mode="json", include={"name", "description", "input_schema"}) for t in tools],
        "options": wanted,
    }



def options_json(options: AdapterOptions) -> dict[str, Any]:
    """AdapterOptions as JSON (a dataclass of plain values)."""
    return asdict(options)


def request_key(canonical: dict[str, Any]) -> str:
    """The stable key: SHA-256 of the RFC 8785 form, so key order and whitespace never matter."""
    return json_hash(canonical)


def _message_summary(message: dict[str, Any]) -> str:
    parts: list[str] = []
    for block in message.get("content", []):
        kind = block.get("type")
        if kind == "text":
            text = str(block.get("text", ""))
            parts.append(repr(text if len(text) <= 60 else text[:57] + "..."))
        elif kind == "tool_use":
            parts.append(f"tool_use {block.get('name')}")
        elif kind == "tool_result":
            parts.append("tool_result" + (" (error)" if block.get("is_error") else ""))
        else:
            parts.append(str(kind))
    return f"{message.get('role')}: " + ", ".join(parts or ["(empty)"])


def request_differences(recorded: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """What a request differs from a recorded one in, said the way a person would look for it."""
    found: list[str] = []
    if recorded.get("model") != wanted.get("model"):
        found.append(f"other model: recorded {recorded.get('model')!r}, requested {wanted.get('model')!r}")
    found.extend(_message_differences(recorded.get("messages", []), wanted.get("messages", [])))
    found.extend(_tool_differences(recorded.get("tools", []), wanted.get("tools", [])))
    old_opts, new_opts = recorded.get("options", {}), wanted.get("options", {})
    for name in sorted(set(old_opts) | set(new_opts)):
        if old_opts.get(name) != new_opts.get(name):
            found.append(f"changed option {name}: recorded {old_opts.get(name)!r}, requested {new_opts.get(name)!r}")
    return found


def _message_differences(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            found.append(f"changed message #{index}: recorded {_message_summary(a)}; requested {_message_summary(b)}")
            break
    for index in range(len(old), len(new)):
        found.append(f"new message #{index}: {_message_summary(new[index])}")
    if len(new) < len(old):
        found.append(f"{len(old) - len(new)} fewer message(s) than recorded "
                     f"(requested {len(new)}, recorded {len(old)})")
    return found


def _tool_differences(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    old_by_name = {t["name"]: t for t in old}
    new_by_name = {t["name"]: t for t in new}
    for name in sorted(set(new_by_name) - set(old_by_name)):
        found.append(f"new tool {name!r}")
    for name in sorted(set(old_by_name) - set(new_by_name)):
        found.append(f"tool {name!r} no longer offered")
    for name in sorted(set(old_by_name) & set(new_by_name)):
        a, b = old_by_name[name], new_by_name[name]
        if a.get("input_schema") != b.get("input_schema"):
            found.append(f"changed tool schema of {name!r}")
        elif a != b:
            found.append(f"changed tool description of {name!r}")
    return found


def closeness(recorded: dict[str, Any], wanted: dict[str, Any]) -> tuple[int, int, int]:
    """A sort key for the closest recording: same model, longest shared message prefix, same tools."""
    old, new = recorded.get("messages", []), wanted.get("messages", [])
    shared = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        shared += 1
    return (
        int(recorded.get("model") == wanted.get("model")),
        shared * 2 - abs(len(old) - len(new)),
        int(recorded.get("tools") == wanted.get("tools")),
    )
