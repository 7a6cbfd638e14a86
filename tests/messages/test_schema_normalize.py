"""Normalization into the portable subset: each rewrite, what it reports, and what is refused."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from metis_core.errors import ToolSchemaError
from metis_core.messages import ToolDefinition
from metis_core.messages.schema_normalize import forget_logged_changes, normalize_schema
from metis_core.messages.tool_schema import check_portable_subset, check_tool_schema


def prop(schema: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": schema}}


def normalized_prop(schema: Any) -> dict[str, Any]:
    result = normalize_schema(prop(schema), name="t").schema
    check_portable_subset("t", result)
    out: dict[str, Any] = result["properties"]["x"]
    return out


def refused(schema: Any) -> ToolSchemaError:
    with pytest.raises(ToolSchemaError) as info:
        ToolDefinition(name="t", description="d", input_schema=schema)
    return info.value


# --- faithful rewrites -------------------------------------------------------------------------


def test_non_recursive_refs_are_inlined_and_defs_dropped() -> None:
    schema = {
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
                  "Line": {"type": "object", "properties": {"a": {"$ref": "#/$defs/Point"},
                                                            "b": {"$ref": "#/$defs/Point"}}}},
        "properties": {"line": {"$ref": "#/$defs/Line"}, "old": {"$ref": "#/definitions/Old"}},
        "definitions": {"Old": {"type": "string"}},
    }
    result = normalize_schema(schema, name="t")
    assert "$defs" not in result.schema and "definitions" not in result.schema
    line = result.schema["properties"]["line"]
    assert line["properties"]["a"] == {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    assert result.schema["properties"]["old"] == {"type": "string"}
    assert {c.path for c in result.changes if c.keyword == "$ref"} >= {"$.properties.line['$ref']",
                                                                         "$.properties.old['$ref']"}
    assert result.lossy_changes == ()


def test_a_ref_beside_a_description_keeps_the_description() -> None:
    schema = {"type": "object", "$defs": {"U": {"type": "string", "enum": ["c", "f"], "description": "unit"}},
              "properties": {"u": {"$ref": "#/$defs/U", "description": "temperature unit"}}}
    assert normalize_schema(schema).schema["properties"]["u"] == {
        "type": "string", "enum": ["c", "f"], "description": "temperature unit"}


def test_type_or_null_becomes_a_nullable_type_list() -> None:
    assert normalized_prop({"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}) == {
        "type": ["string", "null"], "description": "Default: null."}
    assert normalized_prop({"oneOf": [{"type": "null"}, {"type": "string", "enum": ["a"]}]}) == {
        "type": ["string", "null"], "enum": ["a", None]}
    assert normalized_prop({"type": "integer", "nullable": True}) == {"type": ["integer", "null"]}


def test_a_union_with_null_beside_two_types_keeps_an_any_of_with_a_null_branch() -> None:
    assert normalized_prop({"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}) == {
        "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}


def test_titles_are_dropped_and_hints_move_into_the_description() -> None:
    result = normalize_schema(prop({"type": "string", "title": "X", "description": "the x", "default": "a",
                                    "examples": ["a", "b"], "format": "uri", "deprecated": True}))
    assert result.schema["properties"]["x"] == {
        "type": "string",
        "description": 'the x. Default: "a". Examples: ["a","b"]. Deprecated. Format: uri.'}
    assert {c.keyword for c in result.changes} == {"default", "examples", "format", "deprecated"}
    assert result.lossy_changes == ()


def test_const_becomes_a_single_value_enum_or_pinned_range() -> None:
    assert normalized_prop({"const": "fixed"}) == {"type": "string", "enum": ["fixed"]}
    assert normalized_prop({"type": "integer", "const": 3}) == {
        "type": "integer", "minimum": 3, "maximum": 3, "description": "One of: 3."}
    assert normalized_prop({"const": None}) == {"type": "null"}


def test_integer_enums_become_ranges_of_consecutive_values() -> None:
    assert normalized_prop({"type": "integer", "enum": [1, 2, 3, 7], "description": "level"}) == {
        "anyOf": [{"type": "integer", "minimum": 1, "maximum": 3}, {"type": "integer", "minimum": 7, "maximum": 7}],
        "description": "level One of: 1, 2, 3, 7."}


def test_enum_values_the_other_keywords_reject_are_dropped() -> None:
    assert normalized_prop({"type": "string", "enum": ["a", "bb", 3], "maxLength": 1}) == {
        "type": "string", "enum": ["a"]}


def test_all_of_objects_are_merged() -> None:
    result = normalize_schema(prop({"allOf": [
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]},
        {"type": "object", "properties": {"a": {"maximum": 9}, "b": {"type": "string"}}, "required": ["b"]},
    ]}))
    assert result.schema["properties"]["x"] == {
        "type": "object",
        "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}, "b": {"type": "string"}},
        "required": ["a", "b"]}
    assert result.lossy_changes == ()


def test_all_of_over_a_closed_object_that_adds_properties_is_lossy() -> None:
    result = normalize_schema(prop({"allOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
        {"properties": {"b": {"type": "string"}}},
    ]}))
    assert [c.keyword for c in result.lossy_changes] == ["allOf"]


def test_one_of_with_disjoint_branches_is_a_faithful_any_of() -> None:
    result = normalize_schema(prop({"oneOf": [{"type": "string"}, {"type": "boolean"}]}))
    assert result.schema["properties"]["x"] == {"anyOf": [{"type": "string"}, {"type": "boolean"}]}
    assert result.lossy_changes == ()


def test_one_of_discriminated_by_a_constant_tag_is_a_faithful_any_of() -> None:
    cat = {"type": "object", "properties": {"kind": {"const": "cat"}}, "required": ["kind"]}
    dog = {"type": "object", "properties": {"kind": {"const": "dog"}}, "required": ["kind"]}
    assert normalize_schema(prop({"oneOf": [cat, dog]})).lossy_changes == ()


def test_one_of_with_overlapping_branches_is_logged_as_lossy() -> None:
    result = normalize_schema(prop({"oneOf": [{"type": "integer"}, {"type": "number"}]}))
    assert [(c.keyword, c.lossy) for c in result.changes] == [("oneOf", True)]


def test_several_types_become_one_branch_per_type_with_their_own_keywords() -> None:
    assert normalized_prop({"type": ["string", "integer", "null"], "minLength": 2, "minimum": 5}) == {
        "anyOf": [{"type": "string", "minLength": 2}, {"type": "integer", "minimum": 5}, {"type": "null"}]}
    assert normalized_prop({"type": ["integer", "number"]}) == {"type": "number"}


def test_keywords_beside_any_of_move_into_each_branch() -> None:
    assert normalized_prop({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                            "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}) == {
        "anyOf": [{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                   "required": ["a"]},
                  {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                   "required": ["b"]}]}


def test_exclusive_bounds_on_integers_are_exact_and_on_numbers_lossy() -> None:
    assert normalized_prop({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}) == {
        "type": "integer", "minimum": 1, "maximum": 9}
    assert normalized_prop({"type": "integer", "minimum": 0, "exclusiveMinimum": True}) == {
        "type": "integer", "minimum": 1}
    result = normalize_schema(prop({"type": "number", "exclusiveMinimum": 0.5}))
    assert result.schema["properties"]["x"] == {"type": "number", "minimum": 0.5,
                                                "description": "Must be greater than 0.5."}
    assert [c.keyword for c in result.lossy_changes] == ["exclusiveMinimum"]


@pytest.mark.parametrize(("schema", "keyword", "note"), [
    ({"type": "number", "multipleOf": 0.5}, "multipleOf", "Must be a multiple of 0.5."),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "uniqueItems", "Items must be unique."),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1}, "minProperties",
     "Give at least 1 properties."),
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2},
     "prefixItems", "Items in this order: integer, string."),
    ({"type": "boolean", "const": True}, "enum", "Must be true."),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
     "additionalProperties", None),
])
def test_lossy_rewrites_are_reported_and_said_in_the_description(
    schema: dict[str, Any], keyword: str, note: str | None
) -> None:
    result = normalize_schema(prop(schema))
    check_portable_subset("t", result.schema)
    assert keyword in [c.keyword for c in result.lossy_changes]
    if note is not None:
        assert note in result.schema["properties"]["x"]["description"]


def test_keywords_of_another_type_and_unknown_keywords_are_dropped_and_reported() -> None:
    result = normalize_schema(prop({"type": "string", "minimum": 3, "x-widget": "textarea", "$comment": "c"}))
    assert result.schema["properties"]["x"] == {"type": "string"}
    assert {c.keyword for c in result.changes} == {"minimum", "x-widget", "$comment"}
    assert result.lossy_changes == ()


def test_a_typeless_or_nullable_root_is_read_as_an_object() -> None:
    assert normalize_schema({"properties": {"a": {"type": "string"}}}).schema["type"] == "object"
    assert normalize_schema({"type": ["object", "null"], "properties": {}}).schema["type"] == "object"


def test_normalization_leaves_its_input_untouched_and_a_portable_schema_unchanged() -> None:
    schema = prop({"$ref": "#/$defs/A"}) | {"$defs": {"A": {"type": "string", "default": "a"}}}
    snapshot = repr(schema)
    normalize_schema(schema)
    assert repr(schema) == snapshot
    portable = prop({"type": "string", "title": "kept"})
    assert check_tool_schema("t", portable) == []
    assert ToolDefinition(name="t", description="", input_schema=portable).input_schema == portable


# --- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("schema", "construct", "path"), [
    ({"type": "object", "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}},
      "properties": {"head": {"$ref": "#/$defs/N"}}}, "$ref", "$.properties.head.properties.next['$ref']"),
    (prop({"type": "object", "patternProperties": {"^a": {"type": "string"}}}), "patternProperties",
     "$.properties.x.patternProperties"),
    (prop({"type": "string", "if": {"minLength": 1}, "then": {"pattern": "a"}}), "if", "$.properties.x.if"),
    (prop({"type": "string", "not": {"enum": ["a"]}}), "not", "$.properties.x.not"),
    (prop({"type": "object", "additionalProperties": {"type": "integer"}}), "additionalProperties",
     "$.properties.x.additionalProperties"),
    (prop({"description": "anything"}), "type", "$.properties.x.type"),
    (prop({"$ref": "https://example.com/schema.json"}), "$ref", "$.properties.x['$ref']"),
    (prop({"$ref": "#/$defs/missing"}), "$ref", "$.properties.x['$ref']"),
    (prop({"enum": [{"a": 1}]}), "enum", "$.properties.x.enum"),
    (prop({"allOf": [{"type": "string"}, {"type": "integer"}]}), "allOf", "$.properties.x.allOf"),
    (prop({"type": "string", "pattern": "(?=a)b"}), "pattern", "$.properties.x.pattern"),
    ({"type": "string"}, "type", "$.type"),
])
def test_what_cannot_be_carried_is_refused_with_its_path_and_reason(
    schema: dict[str, Any], construct: str, path: str
) -> None:
    error = refused(schema)
    assert (error.construct, error.path) == (construct, path)
    assert f"at {path}: " in str(error)


def test_a_recursive_reference_says_it_is_recursive() -> None:
    schema = {"type": "object", "$defs": {"N": {"type": "object", "properties": {"kids": {
        "type": "array", "items": {"$ref": "#/$defs/N"}}}}}, "properties": {"root": {"$ref": "#/$defs/N"}}}
    assert "recursive" in str(refused(schema))


# --- the tool definition -----------------------------------------------------------------------


def test_tool_definition_keeps_the_source_schema_and_the_changes() -> None:
    schema = prop({"type": "integer", "default": 3})
    tool = ToolDefinition(name="t", description="", input_schema=schema)
    assert tool.source_schema == schema
    assert tool.input_schema == prop({"type": "integer", "description": "Default: 3."})
    assert [str(c) for c in tool.schema_changes] == ["$.properties.x.default: default: moved into the description"]
    assert [str(c) for c in check_tool_schema("t", schema)] == [str(c) for c in tool.schema_changes]


def test_input_must_also_meet_the_declared_schema_when_normalization_lost_something() -> None:
    from metis_core.messages.tool_input import tool_input_violations

    declared = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {
        "n": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "multipleOf": 0.5},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}}
    tool = ToolDefinition(name="t", description="", input_schema=declared)
    assert tool.input_schema["properties"]["n"]["minimum"] == 0  # the model is told "greater than 0"
    assert tool_input_violations(tool, {"n": 1.5, "tags": ["a", "b"]}) == []
    assert tool_input_violations(tool, {"n": 0, "tags": ["a", "a"]}) == [
        "$.n: 0 is less than or equal to the minimum of 0",
        "$.tags: ['a', 'a'] has non-unique elements",
    ]
    assert tool_input_violations(tool, {"n": 0.7}) == ["$.n: 0.7 is not a multiple of 0.5"]
    faithful = ToolDefinition(name="u", description="", input_schema=prop({"type": "integer", "default": 1}))
    assert tool_input_violations(faithful, {"x": "1"}) == ["$.x: '1' is not of type 'integer'"]


def test_each_lossy_change_is_logged_once_per_tool(caplog: pytest.LogCaptureFixture) -> None:
    forget_logged_changes()
    schema = prop({"type": "number", "multipleOf": 0.5, "default": 1})
    with caplog.at_level(logging.WARNING, logger="metis_core.messages.schema"):
        for _ in range(3):
            ToolDefinition(name="halves", description="", input_schema=schema)
        ToolDefinition(name="other", description="", input_schema=schema)
    lines = [r for r in caplog.records if r.name == "metis_core.messages.schema"]
    assert [(r.tool, r.keyword) for r in lines] == [("halves", "multipleOf"), ("other", "multipleOf")]  # type: ignore[attr-defined]
    assert "$.properties.x.multipleOf" in lines[0].getMessage()
