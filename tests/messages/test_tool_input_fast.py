"""The quick tool-input check never says yes where the full JSON Schema validator says no."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from metis_core.messages import ToolDefinition
from metis_core.messages.tool_input import tool_input_violations
from metis_core.messages.tool_input_fast import quick_check

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
     "required": ["path", "content"]},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}},
     "additionalProperties": False},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 3},
                                               "minItems": 1}}},
    {"type": "object", "properties": {"mode": {"enum": ["a", "b"]}, "x": {"type": ["number", "null"]}},
     "additionalProperties": {"type": "boolean"}},
    {"type": "object", "properties": {"inner": {"type": "object", "properties": {"q": {"type": "string",
                                                                                      "minLength": 2}},
                                                "required": ["q"]}}},
    {"type": "object", "properties": {"r": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}}},
]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-20, 20) | st.floats(-2, 2, allow_nan=False) | st.text(max_size=4)
    | st.sampled_from(["a", "b", "src/x.py"]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["path", "content", "n", "tags", "mode", "x", "inner", "q", "r", "z"]),
                      children, max_size=4),
    max_leaves=10,
)


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(max_examples=300, deadline=None)
@given(value=JSON)
def test_quick_yes_implies_the_full_validator_finds_nothing(schema: dict[str, Any], value: Any) -> None:
    check = quick_check(schema)
    assert check is not None
    if check(value):
        assert Draft202012Validator(schema).is_valid(value), value


@pytest.mark.parametrize("schema", SCHEMAS)
def test_quick_check_accepts_plainly_valid_inputs(schema: dict[str, Any]) -> None:
    check = quick_check(schema)
    assert check is not None
    assert check({}) or "required" in schema


def test_quick_check_is_exact_on_typical_calls() -> None:
    check = quick_check(SCHEMAS[0])
    assert check is not None
    assert check({"path": "a.py", "content": "x"})
    assert not check({"path": "a.py"})  # missing required
    assert not check({"path": 1, "content": "x"})
    bounded = quick_check(SCHEMAS[1])
    assert bounded is not None
    assert bounded({"n": 3}) and bounded({"n": 3.0})
    assert not bounded({"n": True}) and not bounded({"n": 11}) and not bounded({"n": 1, "other": 2})


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"d": {"type": "string", "format": "date"}}},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}},
    {"type": "object", "properties": {"n": {"enum": [1, 2]}}},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
    {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}]}}},
    {"type": "object", "properties": {"x": False}},
])
def test_schemas_outside_the_subset_always_go_to_the_full_validator(schema: dict[str, Any]) -> None:
    assert quick_check(schema) is None


def test_violations_are_listed_as_before_when_the_quick_check_says_no() -> None:
    tool = ToolDefinition(name="write_file", description="w", input_schema=SCHEMAS[0])
    assert tool_input_violations(tool, {"path": "a.py", "content": "x"}) == []
    assert tool_input_violations(tool, {"path": 3}) == [
        "$: 'content' is a required property", "$.path: 3 is not of type 'string'"]
