"""A quick yes for tool inputs that plainly satisfy a plain schema, before the full validator runs.

Every answer's tool calls are validated (tool_input.py); the full JSON Schema validator costs
10-20 µs a call even when the input is valid, which is nearly always. For schemas made only of the
keywords below, `quick_check(schema)` compiles a predicate that returns True only when the input
certainly satisfies the schema under draft 2020-12; False means "not sure", and the caller runs
the full validator, which lists the violations. It never replaces that validator's verdict.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly"})
_SUPPORTED = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items", "enum",
                             "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
                             "exclusiveMaximum", "minItems", "maxItems"}
_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def _anything(value: Any) -> bool:
    del value
    return True


def _is_number(value: Any) -> bool:
    return type(value) is int or (type(value) is float and math.isfinite(value))


def _type_check(name: str) -> Check | None:
    if name == "string":
        return lambda v: type(v) is str
    if name == "integer":  # draft 2020-12: 1.0 is an integer too
        return lambda v: type(v) is int or (type(v) is float and v.is_integer())
    if name == "number":
        return _is_number
    if name == "boolean":
        return lambda v: type(v) is bool
    if name == "object":
        return lambda v: type(v) is dict
    if name == "array":
        return lambda v: type(v) is list
    if name == "null":
        return lambda v: v is None
    return None


_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "minLength": operator.ge, "maxLength": operator.le, "minItems": operator.ge, "maxItems": operator.le,
    "minimum": operator.ge, "maximum": operator.le, "exclusiveMinimum": operator.gt, "exclusiveMaximum": operator.lt,
}


def _bound_check(keyword: str, compare: Callable[[Any, Any], bool], bound: Any) -> Check | None:
    """One length or number bound; it applies only to values of its kind (others pass it)."""
    if keyword.endswith(("Length", "Items")):
        if type(bound) is not int or bound < 0:
            return None
        kind: Any = str if keyword.endswith("Length") else list

        def sized(value: Any) -> bool:
            return type(value) is not kind or compare(len(value), bound)

        return sized
    if type(bound) not in (int, float) or not math.isfinite(bound):
        return None

    def number(value: Any) -> bool:
        if type(value) is int:
            return compare(value, bound)
        if type(value) is float:
            return math.isfinite(value) and compare(value, bound)
        return True

    return number


def _required_check(names: tuple[str, ...]) -> Check:
    def check(value: Any) -> bool:
        if type(value) is dict:
            for name in names:
                if name not in value:
                    return False
        return True

    return check


def _any_of(tests: tuple[Check, ...]) -> Check:
    def check(value: Any) -> bool:
        return any(test(value) for test in tests)

    return check


def _items_check(item: Check) -> Check:
    def check(value: Any) -> bool:
        return type(value) is not list or all(item(x) for x in value)

    return check


def _compile(schema: Any, depth: int) -> Check | None:
    """The predicate for `schema`, or None when it uses anything this module does not handle."""
    if schema is True or schema == {}:
        return _anything
    if not isinstance(schema, dict) or depth > 32 or not _SUPPORTED.issuperset(schema):
        return None
    checks: list[Check] = []
    wanted = schema.get("type")
    if wanted is not None:
        names = [wanted] if isinstance(wanted, str) else wanted
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            return None
        tests = [_type_check(n) for n in names]
        if any(t is None for t in tests):
            return None
        chosen = [t for t in tests if t is not None]
        checks.append(chosen[0] if len(chosen) == 1 else _any_of(tuple(chosen)))
    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list) or not options or not all(type(o) is str for o in options):
            return None  # numbers and booleans compare in JSON Schema's own way: leave them to the validator
        allowed = frozenset(options)
        checks.append(lambda v: type(v) is str and v in allowed)
    for keyword, compare in _BOUNDS.items():
        if keyword in schema:
            bound = _bound_check(keyword, compare, schema[keyword])
            if bound is None:
                return None
            checks.append(bound)
    if "required" in schema:
        names = schema["required"]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return None
        checks.append(_required_check(tuple(names)))
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return None
    compiled: dict[str, Check] = {}
    for name, sub in properties.items():
        check = _compile(sub, depth + 1)
        if check is None:
            return None
        compiled[name] = check
    extra: Check | None = _anything
    if "additionalProperties" in schema:
        other = schema["additionalProperties"]
        if other is False:
            extra = None
        else:
            extra = _compile(other, depth + 1)
            if extra is None:
                return None
    if compiled or "additionalProperties" in schema:
        checks.append(_object_check(compiled, extra))
    if "items" in schema:
        item = _compile(schema["items"], depth + 1)
        if item is None:
            return None
        checks.append(_items_check(item))
    return _all_of(tuple(checks))


def _all_of(checks: tuple[Check, ...]) -> Check:
    if not checks:
        return _anything
    if len(checks) == 1:
        return checks[0]

    def check(value: Any) -> bool:
        for test in checks:  # noqa: SIM110 - a plain loop: a generator in all() costs more than the tests
            if not test(value):
                return False
        return True

    return check


def _object_check(properties: dict[str, Check], extra: Check | None) -> Check:
    """`properties` and `additionalProperties` (None: no other property is allowed)."""

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return True
        for key, item in value.items():
            test = properties.get(key)
            if test is None:
                if extra is None or not extra(item):
                    return False
            elif not test(item):
                return False
        return True

    return check


def quick_check(schema: Any) -> Check | None:
    """A sure-yes predicate for `schema`, or None when the full validator must always decide.

    Only a schema under draft 2020-12 (the default, or named by `$schema`) qualifies: older drafts
    read some keywords differently (draft 4's integer excludes 1.0)."""
    if isinstance(schema, dict) and "$schema" in schema:
        named = schema["$schema"]
        if not isinstance(named, str) or named.rstrip("#") != _DRAFT_2020_12:
            return None
        schema = {k: v for k, v in schema.items() if k != "$schema"}
    return _compile(schema, 0)
