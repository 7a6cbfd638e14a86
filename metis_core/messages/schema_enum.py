"""`enum` and `const` in portable form: string enums stay, other values become exact types or ranges.

Gemini accepts enums of strings only, so integers become `minimum`/`maximum` ranges (one per run of
consecutive values), other numbers pinned ranges, `null` a null type, and both booleans a boolean;
all are exact. A single boolean has no portable form and is widened (lossy). Values the schema's
other keywords reject are dropped first, since they could never validate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator

from metis_core.messages.tool_schema import child_path

if TYPE_CHECKING:
    from metis_core.messages.schema_normalize import _Normalizer


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object or array"


def _unique(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if not any(value == seen and type(value) is type(seen) for seen in out):
            out.append(value)
    return out


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    ordered = sorted(set(numbers))
    runs: list[tuple[int, int]] = []
    for number in ordered:
        if runs and number == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def _shown(values: list[Any]) -> str:
    import orjson

    return ", ".join(orjson.dumps(v).decode() for v in values)


def rewrite_enum(n: _Normalizer, s: dict[str, Any], path: str) -> dict[str, Any]:
    values = _enum_values(n, s, path)
    description = s.pop("description", None)
    if s.pop("nullable", False) is True and "type" in s:
        kind = s["type"]
        s["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
    if s:
        allowed = [v for v in values if _allowed(s, v)]
        if len(allowed) < len(values):
            n.change(child_path(path, "enum"), "enum", "dropped values the schema's other keywords reject")
        values = allowed
    if not values:
        raise n.refuse("enum", child_path(path, "enum"), "no value satisfies the schema's other keywords")
    by_kind: dict[str, list[Any]] = {}
    for value in values:
        kind = _kind(value)
        if kind == "object or array":
            raise n.refuse("enum", child_path(path, "enum"),
                           "enum values must be strings, numbers, booleans or null (objects and arrays are not "
                           "portable)")
        by_kind.setdefault(kind, []).append(value)
    branches: list[dict[str, Any]] = []
    notes: list[str] = []
    if "string" in by_kind:
        branches.append({"type": "string", "enum": by_kind["string"]})
    if "integer" in by_kind:
        integers = [int(v) for v in by_kind["integer"]]
        branches.extend({"type": "integer", "minimum": low, "maximum": high} for low, high in _runs(integers))
        n.change(child_path(path, "enum"), "enum", "integer values became integer ranges (Gemini enums are strings)")
    if "number" in by_kind:
        branches.extend({"type": "number", "minimum": v, "maximum": v} for v in by_kind["number"])
        n.change(child_path(path, "enum"), "enum", "number values became exact number bounds")
    if "integer" in by_kind or "number" in by_kind:
        notes.append(f"One of: {_shown(values)}.")
    if "boolean" in by_kind:
        branches.append({"type": "boolean"})
        booleans = _unique(by_kind["boolean"])
        if len(booleans) == 1:
            notes.append(f"Must be {_shown(booleans)}.")
            n.change(child_path(path, "enum"), "enum", f"the single boolean {_shown(booleans)} became any boolean",
                     lossy=True)
    if "null" in by_kind:
        branches.append({"type": "null"})
    result = n.collapse(branches, path, report=False)
    text = " ".join([*([description] if description else []), *notes])
    if text:
        result["description"] = text
    return result


def _allowed(s: dict[str, Any], value: Any) -> bool:
    """Whether `value` meets the schema's other keywords (a type alone is checked without jsonschema)."""
    if set(s) == {"type"}:
        kinds = s["type"] if isinstance(s["type"], list) else [s["type"]]
        kind = _kind(value)
        return kind in kinds or (kind == "integer" and "number" in kinds)
    return bool(Draft202012Validator(s).is_valid(value))


def _enum_values(n: _Normalizer, s: dict[str, Any], path: str) -> list[Any]:
    values: list[Any] | None = None
    if "const" in s:
        values = [s.pop("const")]
        n.change(child_path(path, "const"), "const", "became an enum of one value")
    if "enum" in s:
        enum = s.pop("enum")
        if not isinstance(enum, list) or not enum:
            raise n.refuse("enum", child_path(path, "enum"), "must be a non-empty list")
        values = [v for v in enum if any(v == c and type(v) is type(c) for c in values)] if values is not None else enum
    return _unique(values or [])
