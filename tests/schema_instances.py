"""Hypothesis strategies for instances of a JSON Schema (the constructs real tool schemas use).

hypothesis-jsonschema does not run on current hypothesis releases, so this small generator walks a
schema (refs, enum/const, anyOf/oneOf/allOf, type lists, nullable, bounds, formats, patterns,
tuples) and the caller filters draws through the real validator: generation only has to be close.
"""

from __future__ import annotations

import string
from typing import Any

from hypothesis import strategies as st

JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=8))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(string.ascii_lowercase, max_size=4), inner, max_size=3)),
    max_leaves=6)

_FORMATS: dict[str, st.SearchStrategy[str]] = {
    "date-time": st.datetimes(timezones=st.just(__import__("datetime").timezone.utc)).map(
        lambda d: d.isoformat().replace("+00:00", "Z")),
    "date": st.dates().map(lambda d: d.isoformat()),
    "time": st.times().map(lambda t: t.strftime("%H:%M:%S") + "Z"),
    "uuid": st.uuids().map(str),
    "email": st.from_regex(r"\A[a-z]{1,6}@[a-z]{1,6}\.(com|org)\Z"),
    "ipv4": st.ip_addresses(v=4).map(str),
    "ipv6": st.ip_addresses(v=6).map(str),
    "hostname": st.from_regex(r"\A[a-z]{1,8}(\.[a-z]{1,8}){0,2}\Z"),
    "uri": st.from_regex(r"\Ahttps://[a-z]{1,8}\.com/[a-z]{0,6}\Z"),
    "duration": st.sampled_from(["P1D", "PT2H", "P1Y2M", "PT0.5S"]),
}


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    target: Any = root
    for part in ref[2:].split("/") if ref.startswith("#/") else []:
        target = target[part.replace("~1", "/").replace("~0", "~")]
    return target


def instances(schema: Any, root: dict[str, Any] | None = None, depth: int = 0) -> st.SearchStrategy[Any]:
    root = root if root is not None else schema
    if schema is True or schema == {} or not isinstance(schema, dict) or depth > 8:
        return JSON_VALUES
    if "$ref" in schema:
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        target = _resolve(schema["$ref"], root)
        return instances({**target, **rest} if rest else target, root, depth + 1)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "allOf" in schema:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for branch in schema["allOf"]:
            branch = _resolve(branch["$ref"], root) if "$ref" in branch else branch
            for key, value in branch.items():
                if key == "properties":
                    merged["properties"] = {**merged.get("properties", {}), **value}
                elif key == "required":
                    merged["required"] = [*merged.get("required", []), *value]
                else:
                    merged.setdefault(key, value)
        return instances(merged, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            rest = {k: v for k, v in schema.items() if k not in (key, "description", "title", "default")}
            return st.one_of([instances({**branch, **rest}, root, depth + 1) for branch in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([instances({**schema, "type": k}, root, depth) for k in kind])
    if schema.get("nullable") is True:
        return st.one_of(st.none(), instances({k: v for k, v in schema.items() if k != "nullable"}, root, depth))
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else None
    return _typed(kind, schema, root, depth)


def _typed(kind: Any, schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(schema.get("exclusiveMinimum"), int | float) and not isinstance(schema["exclusiveMinimum"], bool):
            low = int(schema["exclusiveMinimum"]) + 1
        if isinstance(schema.get("exclusiveMaximum"), int | float) and not isinstance(schema["exclusiveMaximum"], bool):
            high = int(schema["exclusiveMaximum"]) - 1
        numbers = st.integers(min_value=None if low is None else int(low),
                              max_value=None if high is None else int(high))
        step = schema.get("multipleOf")
        return numbers.map(lambda n: n * int(step)).filter(lambda n: (low is None or n >= low) and (
            high is None or n <= high)) if isinstance(step, int) and step > 1 else numbers
    if kind == "number":
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        low = None if isinstance(low, bool) else low
        high = None if isinstance(high, bool) else high
        return st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False,
                         exclude_min="exclusiveMinimum" in schema and low is not None,
                         exclude_max="exclusiveMaximum" in schema and high is not None)
    if kind == "string":
        if schema.get("format") in _FORMATS:
            return _FORMATS[schema["format"]]
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        low = schema.get("minLength", 0)
        return st.text(string.ascii_letters + string.digits + " -_", min_size=low,
                       max_size=schema.get("maxLength", low + 12))
    if kind == "array":
        if "prefixItems" in schema:
            return st.tuples(*(instances(s, root, depth + 1) for s in schema["prefixItems"])).map(list)
        items = instances(schema.get("items", {}), root, depth + 1)
        low = schema.get("minItems", 0)
        return st.lists(items, min_size=low, max_size=schema.get("maxItems", low + 3),
                        unique_by=(lambda v: repr(v)) if schema.get("uniqueItems") else None)
    if kind == "object":
        properties = schema.get("properties", {})
        required = [name for name in schema.get("required", []) if name in properties]
        return st.fixed_dictionaries(
            {name: instances(properties[name], root, depth + 1) for name in required},
            optional={name: instances(sub, root, depth + 1) for name, sub in properties.items()
                      if name not in required})
    return JSON_VALUES
