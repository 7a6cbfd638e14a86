"""Round trip: a normalized schema validates the same inputs as the schema it came from (hypothesis).

Instances are generated from the original schema (tests/schema_instances.py, filtered through the
real validator) and must validate against
the normalized one; instances generated from the normalized schema must validate against the
original. A logged lossy change is the one exception, and only in the direction it names: every
lossy rewrite widens (exclusive bound made inclusive, multipleOf or uniqueItems said in words, a
tuple read as a list, oneOf read as anyOf), so the reverse direction is skipped for those schemas.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import validators
from schema_instances import instances
from schema_samples import MCP_DIR, PYDANTIC_CASES

from metis_core.errors import ToolSchemaError
from metis_core.messages.schema_normalize import normalize_schema
from metis_core.messages.tool_input import FORMAT_CHECKER
from metis_core.messages.tool_schema import check_portable_subset


def _validator(schema: dict[str, Any]) -> Any:
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    return cls(schema, format_checker=FORMAT_CHECKER)


def _cases() -> list[tuple[str, dict[str, Any]]]:
    cases = [(name, model.model_json_schema()) for name, model, refusal in PYDANTIC_CASES if refusal is None]
    cases.append(("hand/enums_consts_and_type_lists", {
        "type": "object",
        "properties": {
            "level": {"enum": [1, 2, 3, 7, 2.5, "max", None]},
            "flag": {"const": True},
            "both": {"enum": [True, False]},
            "id": {"type": ["integer", "string"], "minimum": 0, "maxLength": 4},
            "gap": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
            "low": {"type": "number", "exclusiveMaximum": 1.5},
            "opt": {"type": "string", "nullable": True},
            "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "shape": {"allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "boolean"}}},
            ]},
        },
        "required": ["level", "flag"],
    }))
    for path in sorted(MCP_DIR.glob("*.json")):
        for tool in json.loads(path.read_text())["tools"]:
            schema = tool["inputSchema"]
            if not _needs_normalizing(schema):
                continue
            try:
                normalize_schema(schema, name=tool["name"])
            except ToolSchemaError:
                continue
            cases.append((f"mcp/{path.stem}/{tool['name']}", schema))
    return cases


def _needs_normalizing(schema: dict[str, Any]) -> bool:
    try:
        check_portable_subset("t", schema)
    except ToolSchemaError:
        return True
    return False


CASES = _cases()


def test_the_round_trip_covers_pydantic_models_hand_written_rewrites_and_published_schemas() -> None:
    names = [name for name, _ in CASES]
    assert sum(n.startswith("mcp/") for n in names) >= 20
    assert "hand/enums_consts_and_type_lists" in names


@pytest.mark.parametrize(("case", "original"), CASES, ids=[c[0] for c in CASES])
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_normalized_schema_validates_the_same_inputs_except_where_a_lossy_change_is_logged(
    case: str, original: dict[str, Any], data: st.DataObject
) -> None:
    normalized = normalize_schema(original, name=case)
    before, after = _validator(original), _validator(normalized.schema)
    instance = data.draw(instances(original).filter(before.is_valid), label="valid for the original")
    assert after.is_valid(instance), (instance, [e.message for e in after.iter_errors(instance)])
    if normalized.lossy_changes:
        return  # lossy rewrites widen: the normalized schema may accept what the original did not
    instance = data.draw(instances(normalized.schema).filter(after.is_valid), label="valid for the normalized")
    assert before.is_valid(instance), (instance, [e.message for e in before.iter_errors(instance)])


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=st.one_of(st.integers(-20, 20), st.floats(-5, 5, allow_nan=False), st.booleans(), st.none(),
                       st.sampled_from(["max", "a", ""])))
def test_enum_and_const_rewrites_accept_exactly_the_listed_values(value: Any) -> None:
    original = {"type": "object", "properties": {
        "level": {"enum": [1, 2, 3, 7, 2.5, "max", None]},
        "pinned": {"const": 3},
        "both": {"enum": [True, False]},
    }}
    normalized = normalize_schema(original, name="t")
    assert normalized.lossy_changes == ()
    before, after = _validator(original), _validator(normalized.schema)
    for name in ("level", "pinned", "both"):
        assert before.is_valid({name: value}) == after.is_valid({name: value}), (name, value)
