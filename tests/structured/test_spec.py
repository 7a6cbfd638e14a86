"""OutputSpec: pydantic models and JSON Schema dicts, errors that name paths and rules, never the answer."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from metis_core.errors import OutputSchemaError
from metis_core.structured.spec import OutputInvalid, output_spec

SECRET = "hunter2-the-output"


class Person(BaseModel):
    age: int
    available: bool


def test_a_model_spec_validates_json_with_pydantic_and_names_the_model() -> None:
    spec = output_spec(Person)
    assert spec.name == "Person" and spec.schema["required"] == ["age", "available"]
    assert spec.validate_json(b'{"age": 3, "available": true}') == Person(age=3, available=True)


def test_a_model_spec_reports_parse_errors_apart_from_violations_without_the_input() -> None:
    spec = output_spec(Person)
    with pytest.raises(OutputInvalid) as parse:
        spec.validate_json(f"not json {SECRET}")
    assert parse.value.parse_error and SECRET not in str(parse.value)
    with pytest.raises(OutputInvalid) as violation:
        spec.validate_json(f'{{"age": "{SECRET}", "available": true}}')
    assert not violation.value.parse_error
    assert violation.value.errors == ["$.age: Input should be a valid integer, unable to parse string as an integer"]


def test_a_dict_spec_errors_come_from_the_schema_side_only() -> None:
    spec = output_spec({"title": "Order", "type": "object", "additionalProperties": False,
                        "properties": {"id": {"type": "integer"}, "tag": {"enum": ["a", "b"]}}, "required": ["id"]})
    assert spec.name == "Order"
    with pytest.raises(OutputInvalid) as invalid:
        spec.validate_python({"tag": SECRET, SECRET: 1})
    text = "; ".join(invalid.value.errors)
    assert SECRET not in text
    assert "$: missing required field(s) 'id'" in text and '$.tag: must satisfy enum ["a","b"]' in text
    assert "$: 1 field(s) not in the schema (allowed: id, tag)" in text


def test_output_that_is_neither_a_model_nor_a_schema_is_a_named_error() -> None:
    with pytest.raises(OutputSchemaError, match="pydantic model class or a JSON Schema dict"):
        output_spec(42)  # type: ignore[arg-type]
    with pytest.raises(OutputSchemaError, match="not valid JSON Schema"):
        output_spec({"type": 12})
