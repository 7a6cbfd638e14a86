"""Real-world tool schemas are either normalized into one every adapter accepts, or refused with a path.

The table: pydantic v2 models (nested, optional, defaults, enums, literals, unions, constrained
types), the tool schemas of the recorded traffic in tests/data/shared/fixtures/wire, and the tool
schemas MCP servers publish (tests/data/mcp_tool_schemas, provenance beside each file). An accepted
schema must build a request that each provider's SDK types accept, and meet Gemini's and OpenAI
strict mode's rules; a refusal must name a JSON path and a reason.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from schema_oracles import check_every_adapter_accepts, gemini_violations, strict_projection, strict_violations
from schema_samples import MCP, PYDANTIC_CASES, WIRE

from metis_core.errors import ToolSchemaError
from metis_core.messages import ToolDefinition
from metis_core.messages.tool_schema import check_portable_subset

# Every refusal in the recorded and published corpus, with the construct and path it must name.
EXPECTED_REFUSALS = {
    "mcp/server-puppeteer/puppeteer_navigate": ("properties", "$.properties.launchOptions.properties"),
    "mcp/github-mcp-server/actions_run_trigger/pkg/github/__toolsnaps__/actions_run_trigger.snap":
        ("properties", "$.properties.inputs.properties"),
    "mcp/github-mcp-server/projects_write/pkg/github/__toolsnaps__/projects_write.snap":
        ("type", "$.properties.updated_field.anyOf[0].properties.value.type"),
}


def _check_accepted(name: str, schema: dict[str, Any]) -> ToolDefinition:
    tool = ToolDefinition(name=name.replace("/", "_")[-64:], description="d", input_schema=schema)
    check_portable_subset(tool.name, tool.input_schema)
    check_every_adapter_accepts(tool)
    assert gemini_violations(tool) == []
    assert strict_violations(strict_projection(tool.input_schema)) == []
    return tool


def _refusal(name: str, schema: dict[str, Any]) -> ToolSchemaError:
    with pytest.raises(ToolSchemaError) as info:
        ToolDefinition(name=name.replace("/", "_")[-64:], description="d", input_schema=schema)
    error = info.value
    assert error.path.startswith("$") and ": " in str(error), str(error)
    return error


@pytest.mark.parametrize(("case", "model", "refusal"), PYDANTIC_CASES, ids=[c[0] for c in PYDANTIC_CASES])
def test_pydantic_model_schema_is_normalized_for_every_adapter_or_refused_with_a_path(
    case: str, model: type[BaseModel], refusal: tuple[str, str] | None
) -> None:
    schema = model.model_json_schema()
    if refusal is None:
        tool = _check_accepted(case, schema)
        assert tool.source_schema == schema
    else:
        error = _refusal(case, schema)
        assert (error.construct, error.path) == refusal


@pytest.mark.parametrize(("case", "schema"), WIRE, ids=[c[0] for c in WIRE])
def test_recorded_traffic_tool_schema_is_accepted_by_every_adapter(case: str, schema: dict[str, Any]) -> None:
    _check_accepted(case, schema)


@pytest.mark.parametrize(("case", "schema"), MCP, ids=[c[0] for c in MCP])
def test_published_mcp_tool_schema_is_normalized_for_every_adapter_or_refused_with_a_path(
    case: str, schema: dict[str, Any]
) -> None:
    key = next((k for k in EXPECTED_REFUSALS if case == k or case.startswith(k + "/")), None)
    if key is None:
        _check_accepted(case, schema)
    else:
        error = _refusal(case, schema)
        assert (error.construct, error.path) == EXPECTED_REFUSALS[key]


def test_the_corpus_is_the_size_its_sources_say() -> None:
    assert len(WIRE) >= 20
    assert len(MCP) == 117 + 83
    normalized = [c for c, s in MCP if _outside_subset(c, s)]
    assert len(normalized) >= 90  # most published schemas need normalizing ($schema, default, format ...)


def _outside_subset(case: str, schema: dict[str, Any]) -> bool:
    try:
        check_portable_subset(case, schema)
    except ToolSchemaError:
        return True
    return False


def test_the_strict_oracle_catches_what_it_claims() -> None:
    """The oracles themselves can fail: an open object, an unknown keyword, a numeric enum."""
    open_object = {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}
    assert strict_violations(open_object) == ["$: additionalProperties must be false",
                                              "$: every property must be required",
                                              "$.properties.a: 'default' is not a strict-mode keyword"]
    tool = ToolDefinition.model_construct(name="t", description="", input_schema={
        "type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}})
    assert gemini_violations(tool) == ["$.properties.n: Gemini enums are strings only"]
    for bad in ({"type": "object", "properties": {"a": {"type": "date"}}}, {"type": "array", "items": {}}):
        with pytest.raises((ValidationError, UserWarning)):
            check_every_adapter_accepts(ToolDefinition.model_construct(name="t", description="", input_schema=bad))
