"""StructuredPlan: how one model carries an output schema — as a json_schema format, a forced tool, or words.

The mode comes from the registry (`structured_output_mode`, docs/model-registry.md). This module
holds the provider-blind parts: reducing a schema into the portable subset (normalize_schema, lossy
changes logged once), the forced-tool and instructions forms, and the wording of instructions and
corrective fragments. Provider specifics (OpenAI strict, OpenRouter passthrough) are in each
adapter's `structured.py`, which builds on these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from metis_core.errors import CapabilityMismatchError, ToolSchemaError
from metis_core.messages import ToolDefinition
from metis_core.messages.schema_changes import SchemaChange, log_lossy_changes
from metis_core.messages.schema_normalize import normalize_schema
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.structured.spec import OutputSpec

StructuredMode = Literal["json_schema", "tool", "instructions"]


@dataclass(slots=True)
class StructuredPlan:
    """What to add to a request so the model answers in the schema, and where to read the answer."""

    mode: StructuredMode
    response_format: dict[str, Any] | None = None
    """Canonical AdapterOptions.response_format: {"name", "schema", "strict"?}."""
    tool: ToolDefinition | None = None
    """The single tool the model is forced to call (mode "tool"); its input is the answer."""
    instructions: str = ""
    """A system instruction added before the conversation (always for "instructions", a reminder otherwise)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider-only request fields (merged into AdapterOptions.extra)."""
    changes: tuple[SchemaChange, ...] = ()


def reduced_schema(spec: OutputSpec, *, object_root: bool = False) -> tuple[dict[str, Any], tuple[SchemaChange, ...]]:
    """The spec's schema in the portable subset; lossy changes logged once. ToolSchemaError if it cannot be."""
    normalized = normalize_schema(spec.schema, name=f"output {spec.name}", top_level_object=object_root)
    log_lossy_changes(f"output {spec.name}", normalized.changes)
    return normalized.schema, normalized.changes


def json_schema_plan(spec: OutputSpec, *, strict: bool | None = None) -> StructuredPlan:
    schema, changes = reduced_schema(spec)
    response_format: dict[str, Any] = {"name": spec.name, "schema": schema}
    if strict is not None:
        response_format["strict"] = strict
    return StructuredPlan("json_schema", response_format=response_format, changes=changes,
                          instructions=reminder(spec))


def tool_plan(spec: OutputSpec) -> StructuredPlan:
    if spec.schema.get("type", "object") != "object":
        raise ToolSchemaError(spec.name, "type", "$.type", "a forced tool carries only an object root; "
                              "wrap the value in an object or pick a model with native structured output")
    description = spec.description or f"Give the answer as the {spec.name} object."
    tool = ToolDefinition(name=spec.name, description=description, input_schema=spec.schema)
    return StructuredPlan("tool", tool=tool, changes=tool.schema_changes,
                          instructions=f"Answer by calling the {spec.name} tool exactly once; its input is the answer.")


def instructions_plan(spec: OutputSpec) -> StructuredPlan:
    schema = orjson.dumps(spec.schema).decode()
    return StructuredPlan("instructions", instructions=(
        f"Answer with a single JSON value that validates against this JSON Schema ({spec.name}), and nothing "
        f"else: no prose, no markdown fences.\nSchema: {schema}"))


def reminder(spec: OutputSpec) -> str:
    return f"Answer only with the {spec.name} JSON object the response format describes."


def default_plan(spec: OutputSpec, caps: AdapterCapabilities, model: str) -> StructuredPlan:
    """The registry's mode for this model, provider-blind. Raises CapabilityMismatchError if it cannot carry it."""
    mode = caps.output_mode
    try:
        if mode == "json_schema":
            return json_schema_plan(spec)
        if mode == "tool":
            if not caps.supports_tools:
                raise CapabilityMismatchError(model, "supports_tools", "the registry says forced-tool structured "
                                              "output but the model takes no tools; fix its entry")
            return tool_plan(spec)
    except ToolSchemaError as error:
        raise CapabilityMismatchError(model, "structured_output_mode",
                                      f"the output schema cannot travel as {mode}: {error}") from None
    return instructions_plan(spec)


def corrective_fragment(spec: OutputSpec, errors: list[str] | tuple[str, ...], *, parse_error: bool) -> str:
    """The user turn of a corrective retry: the validator's errors, never an excerpt of the answer."""
    what = "was not valid JSON" if parse_error else f"did not match the {spec.name} schema"
    listed = "\n".join(f"- {e}" for e in errors[:20])
    return (f"Your previous answer {what}. Validator errors:\n{listed}\n"
            f"Answer again with only the corrected {spec.name} JSON.")


def reformat_instructions(spec: OutputSpec) -> str:
    return (f"Convert the answer the user gives into the {spec.name} JSON described by the response format. "
            "Keep its content; do not add facts. Output only the JSON.")


def carry_failure(schema: dict[str, Any], caps: AdapterCapabilities, model: str) -> str | None:
    """Why `model` cannot carry an output `schema` in its registry mode, or None if it can (routing asks)."""
    from metis_core.structured.spec import output_spec

    try:
        default_plan(output_spec(schema), caps, model)
    except (CapabilityMismatchError, ToolSchemaError) as error:
        return str(error)
    return None
