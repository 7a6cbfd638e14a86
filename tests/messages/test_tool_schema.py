"""The portable tool-schema subset (§5.4, §11.1 test 5) and tool input validation (§5.2.4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from metis_core.errors import ToolInputInvalidError, ToolSchemaError
from metis_core.messages.tool_input import tool_input_violations, validate_tool_input, validator_for
from metis_core.messages.tool_schema import check_portable_subset, check_tool_schema
from metis_core.messages.tools import SideEffects, ToolDefinition

READ_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "read_file",
    "description": "Read a file from the workspace",
    "properties": {
        "path": {"type": "string", "description": "workspace-relative path", "minLength": 1, "maxLength": 4096},
        "encoding": {"type": ["string", "null"], "enum": ["utf-8", "latin-1", None]},
        "start_line": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1.5},
        "follow": {"type": "boolean"},
        "since": {"type": "string", "format": "date-time"},
        "sha": {"type": "string", "pattern": "^[0-9a-f]{40}$"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 0, "maxItems": 10},
        "range": {
            "type": ["object", "null"],
            "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}},
            "required": ["start", "end"],
            "additionalProperties": False,
        },
        "target": {
            "description": "a line number or a symbol name",
            "anyOf": [{"type": "integer"}, {"type": "string", "minLength": 1}],
        },
        "nothing": {"type": "null"},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def read_file_tool(schema: dict[str, Any] | None = None) -> ToolDefinition:
    return ToolDefinition(
        name="read_file",
        description="Read a file",
        input_schema=schema if schema is not None else copy.deepcopy(READ_FILE_SCHEMA),
        side_effects=SideEffects.READ,
    )


def schema_error(schema: dict[str, Any]) -> ToolSchemaError:
    """The subset check alone, without normalization (tests/messages/test_schema_normalize.py covers that)."""
    with pytest.raises(ToolSchemaError) as info:
        check_portable_subset("t", schema)
    return info.value


def with_property(prop: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": prop}}


# --- the subset ------------------------------------------------------------------------------


def test_schema_using_every_supported_construct_is_accepted() -> None:
    check_portable_subset("read_file", READ_FILE_SCHEMA)
    assert check_tool_schema("read_file", READ_FILE_SCHEMA) == []
    assert read_file_tool().name == "read_file"


def test_tool_without_parameters_is_accepted() -> None:
    assert check_tool_schema("now", {"type": "object", "properties": {}}) == []
    assert check_tool_schema("now", {"type": "object"}) == []


def test_registering_a_tool_with_a_construct_that_cannot_be_carried_fails_naming_construct_and_path() -> None:
    schema = with_property({"type": "string", "not": {"enum": ["x"]}})
    with pytest.raises(ToolSchemaError) as info:
        ToolDefinition(name="t", description="d", input_schema=schema)
    assert info.value.construct == "not"
    assert info.value.path == "$.properties.x.not"
    assert info.value.tool == "t"
    assert "$.properties.x.not" in str(info.value)
    assert "docs/tool-schema-subset.md" in str(info.value)


def test_bad_construct_deep_inside_nested_schemas_reports_its_full_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "where": {"anyOf": [{"type": "integer"}, {"type": "string", "not": {"enum": ["x"]}}]},
                    },
                },
            }
        },
    }
    error = schema_error(schema)
    assert (error.construct, error.path) == ("not", "$.properties.edits.items.properties.where.anyOf[1].not")


@pytest.mark.parametrize(
    "construct",
    [
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "patternProperties",
        "dependentSchemas",
        "$ref",
        "$defs",
        "const",
        "default",
        "nullable",
        "exclusiveMinimum",
        "multipleOf",
        "uniqueItems",
        "prefixItems",
    ],
)
def test_constructs_outside_the_subset_are_rejected(construct: str) -> None:
    prop = {"type": "string", construct: {"type": "string"}}
    error = schema_error(with_property(prop))
    assert error.construct == construct
    assert error.path.startswith("$.properties.x")
    assert construct in error.path


def test_unknown_keyword_is_rejected() -> None:
    error = schema_error(with_property({"type": "string", "x-widget": "textarea"}))
    assert (error.construct, error.path) == ("x-widget", "$.properties.x['x-widget']")
    assert "unknown keyword" in str(error)


def test_top_level_must_be_an_object_schema() -> None:
    assert schema_error({"type": "string"}).path == "$.type"
    assert schema_error({"type": ["object", "null"], "properties": {}}).path == "$.type"
    assert schema_error({"properties": {}}).construct == "type"


def test_top_level_any_of_is_rejected() -> None:
    error = schema_error({"type": "object", "anyOf": [{"type": "object"}]})
    assert (error.construct, error.path) == ("anyOf", "$.anyOf")


def test_defs_and_refs_are_rejected_at_the_root() -> None:
    error = schema_error({"type": "object", "$defs": {"a": {"type": "string"}}, "properties": {}})
    assert (error.construct, error.path) == ("$defs", "$['$defs']")


@pytest.mark.parametrize(
    ("prop", "construct"),
    [
        ({"type": ["string", "integer"]}, "type"),
        ({"type": ["string", "null", "integer"]}, "type"),
        ({"type": "date"}, "type"),
        ({"description": "no type"}, "type"),
        ({"type": "array"}, "items"),
        ({"type": "array", "items": [{"type": "string"}]}, "items"),
        ({"type": "object"}, "properties"),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
            "additionalProperties",
        ),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "required"),
        ({"type": "string", "format": "uri"}, "format"),
        ({"type": "string", "format": "regex"}, "format"),
        ({"type": "integer", "format": "int64"}, "format"),
        ({"type": "integer", "enum": [1, 2]}, "enum"),
        ({"type": "string", "enum": ["a", 1]}, "enum"),
        ({"type": "string", "enum": []}, "enum"),
        ({"type": "string", "pattern": "(?=a)b"}, "pattern"),
        ({"type": "string", "pattern": r"(a)\1"}, "pattern"),
        ({"type": "string", "pattern": "(unclosed"}, "pattern"),
        ({"type": "string", "minLength": -1}, "minLength"),
        ({"type": "string", "minLength": 5, "maxLength": 2}, "minLength"),
        ({"type": "integer", "minimum": "0"}, "minimum"),
        ({"type": "string", "minimum": 0}, "minimum"),
        ({"type": "number", "items": {"type": "string"}}, "items"),
        ({"type": "string", "description": 42}, "description"),
        ({"anyOf": []}, "anyOf"),
        ({"anyOf": [{"type": "string"}], "type": "string"}, "type"),
        ("not a schema", "schema"),
    ],
)
def test_misused_keywords_are_rejected_with_the_construct_named(prop: Any, construct: str) -> None:
    error = schema_error(with_property(prop))
    assert error.construct == construct
    assert error.path.startswith("$.properties.x")


def test_nullable_enum_may_list_null_but_plain_enum_may_not() -> None:
    check_portable_subset("t", with_property({"type": ["string", "null"], "enum": ["a", None]}))
    assert schema_error(with_property({"type": "string", "enum": ["a", None]})).path == "$.properties.x.enum[1]"


def test_property_names_that_are_not_identifiers_are_quoted_in_the_path() -> None:
    error = schema_error(with_property({"type": "object", "properties": {"a.b": {"type": "string", "oneOf": []}}}))
    assert error.path == "$.properties.x.properties['a.b'].oneOf"


def test_a_property_named_like_a_keyword_is_just_a_property() -> None:
    assert check_tool_schema(
        "t", {"type": "object", "properties": {"oneOf": {"type": "string"}, "not": {"type": "boolean"}}}) == []


# --- tool input validation ----------------------------------------------------------------------


def test_valid_input_passes() -> None:
    tool = read_file_tool()
    validate_tool_input(
        tool,
        {
            "path": "src/a.py",
            "encoding": None,
            "since": "2026-05-08T10:00:00Z",
            "range": {"start": 1, "end": 2},
            "target": "main",
            "tags": ["x"],
        },
    )
    assert tool_input_violations(tool, {"path": "a", "target": 3}) == []


def test_invalid_input_lists_every_violation_with_its_path() -> None:
    tool = read_file_tool()
    bad = {
        "encoding": "ebcdic",
        "start_line": 0,
        "since": "yesterday",
        "sha": "xyz",
        "tags": ["a", 2],
        "range": {"start": "1"},
        "target": 1.5,
        "surprise": True,
    }
    with pytest.raises(ToolInputInvalidError) as info:
        validate_tool_input(tool, bad)
    violations = info.value.violations
    assert info.value.tool == "read_file"
    paths = [v.split(":", 1)[0] for v in violations]
    assert paths == sorted(paths)
    expected = {
        "$": ["'path' is a required property", "Additional properties are not allowed ('surprise'"],
        "$.encoding": ["'ebcdic' is not one of"],
        "$.start_line": ["0 is less than the minimum of 1"],
        "$.since": ["'yesterday' is not a 'date-time'"],
        "$.sha": ["'xyz' does not match"],
        "$.tags[1]": ["2 is not of type 'string'"],
        "$.range": ["'end' is a required property"],
        "$.range.start": ["'1' is not of type 'integer'"],
        "$.target": ["1.5 is not valid under any of the given schemas"],
    }
    for path, fragments in expected.items():
        for fragment in fragments:
            assert any(v.startswith(f"{path}: ") and fragment in v for v in violations), (path, fragment, violations)
    assert len(violations) == sum(len(f) for f in expected.values())
    assert "10 violation(s)" in str(info.value)


def test_input_that_is_not_an_object_is_one_violation_at_the_root() -> None:
    assert tool_input_violations(read_file_tool(), ["path"]) == ["$: ['path'] is not of type 'object'"]


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date-time", "2026-05-08T10:00:00.123+02:00", "2026-05-08"),
        ("date", "2026-02-28", "2026-02-30"),
        ("time", "10:00:00Z", "25:00:00"),
        ("email", "a@example.com", "not-an-email"),
        ("uuid", "0b4c6f1e-8d2a-4c53-9b1e-2f0d3c4b5a69", "0b4c6f1e"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "::1", "10.0.0.1"),
        ("hostname", "api.example.com", "-bad-.com"),
        ("duration", "P1DT2H", "1 day"),
    ],
)
def test_every_portable_format_is_checked(fmt: str, good: str, bad: str) -> None:
    tool = ToolDefinition(name="f", description="d", input_schema=with_property({"type": "string", "format": fmt}))
    assert tool_input_violations(tool, {"x": good}) == []
    assert tool_input_violations(tool, {"x": bad}) == [f"$.x: {bad!r} is not a {fmt!r}"]


def test_validator_is_compiled_once_per_schema_and_reused() -> None:
    first = validator_for(read_file_tool())
    assert validator_for(read_file_tool()) is first  # an equal tool built again shares it


def test_validator_follows_a_schema_changed_in_place() -> None:
    tool = read_file_tool()
    assert tool_input_violations(tool, {"path": "a"}) == []
    tool.input_schema["required"] = ["path", "follow"]
    assert tool_input_violations(tool, {"path": "a"}) == ["$: 'follow' is a required property"]

