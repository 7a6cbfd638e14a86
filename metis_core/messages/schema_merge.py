"""Merging the branches of an `allOf` into one schema, as normalization needs (§5.4).

Bounds take the tighter value, types intersect, properties and required lists unite; a property
named in several branches keeps an `allOf` of its schemas, merged again when it is normalized.
Branches that cannot be combined without a construct outside the subset raise SchemaMergeConflict.
It does not resolve references (the caller inlines them first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_LOWER_BOUNDS = frozenset({"minimum", "minLength", "minItems", "minProperties", "exclusiveMinimum"})
_UPPER_BOUNDS = frozenset({"maximum", "maxLength", "maxItems", "maxProperties", "exclusiveMaximum"})
_FIRST_WINS = frozenset({"default", "examples", "example", "title", "deprecated", "readOnly", "writeOnly", "$comment"})


class SchemaMergeConflict(Exception):
    """Two allOf branches say things one portable schema cannot say together."""


def _type_set(kind: Any) -> set[str]:
    names = set(kind) if isinstance(kind, list) else {kind}
    return names | ({"integer"} if "number" in names else set())


def _merge_type(a: Any, b: Any) -> Any:
    common = _type_set(a) & _type_set(b)
    if not common:
        raise SchemaMergeConflict(f"type {a!r} and type {b!r} have no value in common")
    if "number" in common:
        common.discard("integer")
    order = ["object", "array", "string", "integer", "number", "boolean", "null"]
    names = [t for t in order if t in common]
    return names[0] if len(names) == 1 else names


def _same(a: Any, b: Any) -> bool:
    return bool(a == b and type(a) is type(b))


def merge_all_of(branches: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    """One schema meaning all of `branches`, and whether the merge accepts more than the original."""
    merged: dict[str, Any] = {}
    widened = False
    closed_by: list[set[str]] = []  # the declared properties of each branch closing the object
    for branch in branches:
        if not isinstance(branch, Mapping):
            raise SchemaMergeConflict("every branch must be a schema object")
        if branch.get("additionalProperties") is False:
            closed_by.append(set(branch.get("properties") or {}))
        for key, value in branch.items():
            if key not in merged:
                merged[key] = value
                continue
            merged[key] = _merge_keyword(key, merged[key], value)
    if closed_by and merged.get("additionalProperties") is not False:
        merged["additionalProperties"] = False
    if closed_by:
        declared = set(merged.get("properties") or {})
        widened = any(declared - names for names in closed_by)
    return merged, widened


def _merge_keyword(key: str, current: Any, value: Any) -> Any:
    if key == "type":
        return _merge_type(current, value)
    if key == "description":
        return current if current == value else f"{current} {value}"
    if key in _FIRST_WINS:
        return current
    if key in _LOWER_BOUNDS and not isinstance(current, bool) and not isinstance(value, bool):
        return max(current, value)
    if key in _UPPER_BOUNDS and not isinstance(current, bool) and not isinstance(value, bool):
        return min(current, value)
    if key == "required":
        return [*current, *(name for name in value if name not in current)]
    if key == "properties":
        out = dict(current)
        for name, schema in value.items():
            out[name] = schema if name not in out or out[name] == schema else {"allOf": [out[name], schema]}
        return out
    if key == "items" and isinstance(current, Mapping) and isinstance(value, Mapping):
        return current if current == value else {"allOf": [current, value]}
    if key == "additionalProperties":
        if current is False or value is False:
            return False
        if current is True:
            return value
        if value is True or current == value:
            return current
        raise SchemaMergeConflict("two different additionalProperties schemas")
    if key == "enum":
        common = [v for v in current if any(_same(v, w) for w in value)]
        if not common:
            raise SchemaMergeConflict("the enums have no value in common")
        return common
    if key == "allOf":
        return [*current, *value]
    if current == value:
        return current
    raise SchemaMergeConflict(f"two different {key!r} values ({current!r} and {value!r})")
