"""The v0.2 payload schemas against SCHEMA.md's own examples (tests/data/shared/specs/event-log-schema-v0.2.md).

Every example block is read from the spec text: its fields, which of them are "(required)", the
"a|b|c" enums and the value types must be what PAYLOAD_SCHEMAS says, recursively; an instance built
from each example validates, and loses validity when any required field is removed.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import fixtures_root
from jsonschema import Draft202012Validator, FormatChecker

from metis_core.export.event_log_schemas import PAYLOAD_SCHEMAS, REDACTED

SPEC = fixtures_root().parent / "specs" / "event-log-schema-v0.2.md"
BLOCK = re.compile(r"^([A-Z_]+)\n\n(?:[^{\n][^\n]*\n\n)*(\{\n.*?\n\})$", re.M | re.S)
TYPES = {"string": "string", "sha256": "string", "uint64": "integer", "uuid": "string", "int": "integer",
         "float": "number", "boolean": "boolean", "object": "object"}
TIGHTENED = {"MODEL_REQUEST": {"messages"}, "MODEL_REQUEST.messages[]": {"role"}}
"""Where the spec's text is silent (no "(required)"), the schema requires what every entry carries
(event_log_schemas' docstring); only these, so any other difference from the spec fails."""
SAMPLES: dict[str, Any] = {"string": "s", "sha256": "a" * 64, "uint64": 7,
                           "uuid": "0190a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5b", "int": 3, "float": 0.5, "boolean": False,
                           "object": {}}


def spec_examples() -> dict[str, dict[str, Any]]:
    examples = {name: json.loads(body) for name, body in BLOCK.findall(SPEC.read_text())}
    assert len(examples) == 9, sorted(examples)
    return examples


def kind_of(description: str) -> str:
    return description.partition(" (")[0].strip()


def check_field(schema: dict[str, Any], example: Any, where: str) -> None:
    if isinstance(example, dict):
        check_object(schema, example, where)
        return
    if isinstance(example, list):
        assert schema["type"] == "array", where
        check_field(schema["items"], example[0], f"{where}[]")
        return
    kind = kind_of(example)
    if "|" in kind and "..." not in kind:
        values = kind.split("|")
        if set(values) <= set(TYPES):  # object|string: a union of types
            assert sorted(schema["type"]) == sorted(TYPES[v] for v in values), where
        else:
            assert sorted(schema["enum"]) == sorted(values), where
    elif kind in TYPES:
        assert schema["type"] == TYPES[kind], where
        if kind == "sha256":
            assert schema["pattern"] == "^[0-9a-f]{64}$", where
        if kind == "uint64":
            assert schema["minimum"] == 0, where
        if kind == "uuid":
            assert schema["format"] == "uuid", where
    elif "..." in kind:  # "openai|anthropic|azure|...": an open set, any string
        assert schema == {"type": "string"}, where
    else:  # a single literal ("assistant")
        assert schema == {"const": kind}, where


def check_object(schema: dict[str, Any], example: dict[str, Any], where: str) -> None:
    assert set(schema["properties"]) == set(example), where
    required = {k for k, v in example.items() if isinstance(v, str) and "(required" in v}
    assert set(schema["required"]) == required | TIGHTENED.get(where, set()), where
    for key, value in example.items():
        check_field(schema["properties"][key], value, f"{where}.{key}")
        if isinstance(value, str) and re.search(r"required if \w+ is (redacted|'\[REDACTED\]')", value, re.I):
            hashed = re.search(r"REQUIRED if (\w+)|required if (\w+)", value)
            assert hashed is not None
            field = hashed.group(1) or hashed.group(2)
            assert schema["if"]["properties"][field]["const"] in (REDACTED, {REDACTED: True}), where
            assert schema["then"] == {"required": [key]}, where


def sample(example: Any) -> Any:
    if isinstance(example, dict):
        return {k: sample(v) for k, v in example.items()}
    if isinstance(example, list):
        return [sample(example[0])]
    kind = kind_of(example)
    if kind in SAMPLES:
        return SAMPLES[kind]
    if "|" in kind:
        first = kind.split("|")[0]
        return SAMPLES.get(first, first)
    return kind


def test_the_spec_defines_exactly_the_nine_types_we_have_schemas_for() -> None:
    assert sorted(spec_examples()) == sorted(PAYLOAD_SCHEMAS)


@pytest.mark.parametrize("event_type", sorted(PAYLOAD_SCHEMAS))
def test_each_schema_has_the_spec_examples_fields_requirements_enums_and_types(event_type: str) -> None:
    check_object(PAYLOAD_SCHEMAS[event_type], spec_examples()[event_type], event_type)


@pytest.mark.parametrize("event_type", sorted(PAYLOAD_SCHEMAS))
def test_an_instance_of_each_spec_example_validates_and_fails_without_a_required_field(event_type: str) -> None:
    validator = Draft202012Validator(PAYLOAD_SCHEMAS[event_type], format_checker=FormatChecker())
    instance = sample(spec_examples()[event_type])
    validator.validate(instance)
    for field in PAYLOAD_SCHEMAS[event_type]["required"]:
        assert not validator.is_valid({k: v for k, v in instance.items() if k != field}), field
