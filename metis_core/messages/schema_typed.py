"""The keywords of one typed schema brought into the subset: objects, arrays, strings, numbers.

Exclusive bounds on integers become inclusive ones (exact); on numbers, `multipleOf`,
`uniqueItems`, `minProperties`/`maxProperties` and tuple arrays are said in the description and
logged as lossy. Keywords that only apply to another type are dropped (they constrain nothing here).
Free-form maps (`additionalProperties` with no declared properties) are refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from metis_core.messages.tool_schema import KEYWORDS_BY_TYPE, SAFE_FORMATS, child_path

if TYPE_CHECKING:
    from metis_core.messages.schema_normalize import _Normalizer

_MAP_WHY = ("an object with free-form keys (a dict) is not portable: OpenAI strict mode and Gemini need every "
            "property declared; use a list of objects with a key and a value instead")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def normalize_typed(n: _Normalizer, s: dict[str, Any], path: str, kind: str, notes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": s.pop("type")}
    if "description" in s:
        out["description"] = s.pop("description")
    if kind == "object":
        _object(n, s, out, path, notes)
    elif kind == "array":
        _array(n, s, out, path, notes)
    elif kind == "string":
        _string(n, s, out, path, notes)
    elif kind in ("number", "integer"):
        _numeric(n, s, out, path, kind, notes)
    for key in s:
        n.change(child_path(path, key), key, f"dropped (it applies only to other types than {kind})")
    return out


def _object(n: _Normalizer, s: dict[str, Any], out: dict[str, Any], path: str, notes: list[str]) -> None:
    props_path = child_path(path, "properties")
    properties = s.pop("properties", None)
    if properties is not None:
        if not isinstance(properties, Mapping):
            raise n.refuse("properties", props_path, "must be an object mapping names to schemas")
        out["properties"] = {str(k): n.node(v, child_path(props_path, str(k))) for k, v in properties.items()}
    if "required" in s:
        out["required"] = s.pop("required")
    for key in ("additionalProperties", "unevaluatedProperties"):
        if key not in s:
            continue
        value = s.pop(key)
        key_path = child_path(path, key)
        if value is False:
            out["additionalProperties"] = False
            if key == "unevaluatedProperties":
                n.change(key_path, key, "became additionalProperties: false (the properties are all merged here)")
        elif value is True or value == {}:
            n.change(key_path, key, "dropped: true is what leaving it out means")
        elif not out.get("properties"):
            raise n.refuse(key, key_path, _MAP_WHY)
        else:
            n.change(key_path, key, "dropped: undeclared properties are no longer checked against its schema",
                     lossy=True)
    for key, label in (("minProperties", "at least"), ("maxProperties", "at most")):
        if key in s:
            value = s.pop(key)
            if key == "minProperties" and value == 0:
                n.change(child_path(path, key), key, "dropped (0 constrains nothing)")
                continue
            notes.append(f"Give {label} {value} properties.")
            n.change(child_path(path, key), key, "moved into the description", lossy=True)


def _array(n: _Normalizer, s: dict[str, Any], out: dict[str, Any], path: str, notes: list[str]) -> None:
    items = s.pop("items", None)
    prefix = s.pop("prefixItems", None)
    if isinstance(items, list):  # draft 4-7 tuple form
        prefix, items = items, s.pop("additionalItems", None)
    if prefix is not None:
        _tuple(n, prefix, items, out, path, notes)
    elif items is not None:
        out["items"] = n.node(items, child_path(path, "items"))
    s.pop("additionalItems", None)
    for key in ("minItems", "maxItems"):
        if key in s:
            out[key] = s.pop(key)
    if "uniqueItems" in s:
        if s.pop("uniqueItems") is True:
            notes.append("Items must be unique.")
            n.change(child_path(path, "uniqueItems"), "uniqueItems", "moved into the description", lossy=True)
        else:
            n.change(child_path(path, "uniqueItems"), "uniqueItems", "dropped (false constrains nothing)")
    for key in ("minContains", "maxContains"):
        if key in s:
            s.pop(key)
            n.change(child_path(path, key), key, "dropped (it constrains nothing without contains)")


def _tuple(n: _Normalizer, prefix: Any, rest: Any, out: dict[str, Any], path: str, notes: list[str]) -> None:
    prefix_path = child_path(path, "prefixItems")
    if not isinstance(prefix, list) or not prefix:
        raise n.refuse("prefixItems", prefix_path, "must be a non-empty list of schemas")
    schemas = [n.node(item, f"{prefix_path}[{i}]") for i, item in enumerate(prefix)]
    if rest not in (None, False):
        schemas.append(n.node(rest, child_path(path, "items")))
    branches: list[dict[str, Any]] = []
    for schema in schemas:
        if schema not in branches:
            branches.append(schema)
    out["items"] = branches[0] if len(branches) == 1 else {"anyOf": branches}
    notes.append(f"Items in this order: {', '.join(_type_name(x) for x in schemas[: len(prefix)])}.")
    n.change(prefix_path, "prefixItems", "a tuple became an array of any of its item schemas", lossy=True)


def _type_name(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "value")
    return "/".join(kind) if isinstance(kind, list) else str(kind)


def _string(n: _Normalizer, s: dict[str, Any], out: dict[str, Any], path: str, notes: list[str]) -> None:
    for key in ("minLength", "maxLength", "pattern"):
        if key in s:
            out[key] = s.pop(key)
    if "format" in s:
        fmt = s.pop("format")
        if fmt in SAFE_FORMATS:
            out["format"] = fmt
        else:
            notes.append(f"Format: {fmt}.")
            n.change(child_path(path, "format"), "format", "moved into the description (not a portable format)")


def _numeric(n: _Normalizer, s: dict[str, Any], out: dict[str, Any], path: str, kind: str, notes: list[str]) -> None:
    for key in ("minimum", "maximum"):
        if key in s:
            out[key] = s.pop(key)
    for key, bound, tighter in (("exclusiveMinimum", "minimum", max), ("exclusiveMaximum", "maximum", min)):
        if key not in s:
            continue
        value = s.pop(key)
        key_path = child_path(path, key)
        if isinstance(value, bool):  # draft 4: a flag on minimum/maximum
            if not value:
                n.change(key_path, key, "dropped (false constrains nothing)")
                continue
            if bound not in out:
                raise n.refuse(key, key_path, f"true needs a {bound} beside it")
            value = out.pop(bound)
        if not _number(value):
            raise n.refuse(key, key_path, "must be a number")
        if kind == "integer":
            inclusive = math.floor(value) + 1 if bound == "minimum" else math.ceil(value) - 1
            out[bound] = tighter(out[bound], inclusive) if bound in out else inclusive
            n.change(key_path, key, f"became {bound} {inclusive} (exact for integers)")
        elif bound in out and tighter(out[bound], value) == out[bound] and out[bound] != value:
            n.change(key_path, key, f"dropped ({bound} is already tighter)")
        else:
            out[bound] = value
            notes.append(f"Must be {'greater' if bound == 'minimum' else 'less'} than {value}.")
            n.change(key_path, key, f"became {bound} {value}; the bound itself is now accepted", lossy=True)
    if "multipleOf" in s:
        step = s.pop("multipleOf")
        if kind == "integer" and step == 1:
            n.change(child_path(path, "multipleOf"), "multipleOf", "dropped (every integer is a multiple of 1)")
        else:
            notes.append(f"Must be a multiple of {step}.")
            n.change(child_path(path, "multipleOf"), "multipleOf", "moved into the description", lossy=True)
    if "format" in s:
        notes.append(f"Format: {s.pop('format')}.")
        n.change(child_path(path, "format"), "format", "moved into the description (not a portable format)")
    for key in list(s):
        if key in KEYWORDS_BY_TYPE[kind]:
            out[key] = s.pop(key)
