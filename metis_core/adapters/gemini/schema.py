"""JSON Schema (the portable subset) ⇄ Gemini's Schema dialect for function parameters.

Gemini's `parameters` is an OpenAPI-3.0-style Schema: upper-case type names, `nullable: true`
instead of a `[T, "null"]` type list, no `additionalProperties`. Keywords it rejects are dropped
with one WARN line per tool and path. The reverse direction reads what SDKs send (upper- or
lower-case types, `nullable`, `propertyOrdering`) back into the canonical subset. It does not check
schemas against the subset (ToolDefinition does).
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("metis_core.adapters.gemini")

_COPIED = frozenset(
    {"description", "title", "required", "minItems", "maxItems", "minLength", "maxLength", "pattern",
     "minimum", "maximum", "format", "enum"}
)
_DROPPED_WHY = {
    "additionalProperties": "Gemini function parameters have no additionalProperties",
}
_warned: set[tuple[str, str, str]] = set()


def _warn_once(tool: str, path: str, keyword: str, why: str) -> None:
    key = (tool, path, keyword)
    if key in _warned:
        return
    _warned.add(key)
    log.warning("tool %r: dropped %s at %s for Gemini: %s", tool, keyword, path, why,
                extra={"tool": tool, "keyword": keyword, "path": path, "adapter": "gemini"})


def to_gemini_schema(schema: dict[str, Any], tool: str, path: str = "$") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            if isinstance(value, list):
                others = [t for t in value if t != "null"]
                out["type"] = str(others[0]).upper() if others else "NULL"
                if "null" in value:
                    out["nullable"] = True
            else:
                out["type"] = str(value).upper()
        elif key == "properties":
            out["properties"] = {name: to_gemini_schema(sub, tool, f"{path}.properties.{name}")
                                 for name, sub in value.items()}
        elif key == "items":
            out["items"] = to_gemini_schema(value, tool, f"{path}.items")
        elif key == "anyOf":
            out["anyOf"] = [to_gemini_schema(b, tool, f"{path}.anyOf[{i}]") for i, b in enumerate(value)]
        elif key == "enum":
            values = [v for v in value if v is not None]  # null is carried by `nullable`
            out["enum"] = values
        elif key in _COPIED:
            out[key] = value
        elif key == "additionalProperties" and value is False:
            _warn_once(tool, path, key, _DROPPED_WHY[key])
        else:
            _warn_once(tool, path, key, _DROPPED_WHY.get(key, "not part of Gemini's Schema"))
    return out


def parameters_for(input_schema: dict[str, Any], tool: str) -> dict[str, Any] | None:
    """`parameters` for a declaration, or None for a tool without arguments (Gemini rejects an OBJECT
    with empty `properties`, so such tools are declared without parameters)."""
    if not input_schema.get("properties"):
        return None
    return to_gemini_schema(input_schema, tool)


_READ_SKIPPED = frozenset({"propertyOrdering", "property_ordering", "example", "default", "nullable"})


def from_gemini_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Gemini Schema (either case of type names, camel or snake keys) -> portable JSON Schema."""
    out: dict[str, Any] = {}
    nullable = schema.get("nullable") is True
    for key, value in schema.items():
        if key == "type":
            name = str(value).lower()
            out["type"] = [name, "null"] if nullable and name != "null" else name
        elif key == "properties":
            out["properties"] = {n: from_gemini_schema(s) for n, s in value.items()}
        elif key == "items":
            out["items"] = from_gemini_schema(value)
        elif key in ("anyOf", "any_of"):
            out["anyOf"] = [from_gemini_schema(b) for b in value]
        elif key in _READ_SKIPPED:
            continue
        else:
            out[_camel(key)] = value
    if nullable and isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word.title() for word in rest)
