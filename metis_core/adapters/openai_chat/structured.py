"""How Chat Completions carries an output schema: `response_format: json_schema`, strict where it qualifies.

Strict decoding needs every object closed and every property required; objects that leave
`additionalProperties` unsaid are closed (recorded), and `strict` is set only when the result
qualifies. Other modes fall back to the provider-blind plans (structured/plan.py).
"""

from __future__ import annotations

from metis_core.adapters._common.strict_schema import closed_schema, is_strict_compatible
from metis_core.errors import CapabilityMismatchError, ToolSchemaError
from metis_core.messages.schema_changes import SchemaChange, log_lossy_changes
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.structured.plan import StructuredPlan, default_plan, reduced_schema, reminder
from metis_core.structured.spec import OutputSpec


def strict_json_schema_plan(spec: OutputSpec) -> StructuredPlan:
    """The reduced schema, closed, with `strict: true` when OpenAI's strict mode accepts it."""
    schema, reduced = reduced_schema(spec)
    closing: list[SchemaChange] = []
    closed = closed_schema(schema, changes=closing)
    strict = is_strict_compatible(closed)
    if strict:
        schema = closed
        log_lossy_changes(f"output {spec.name}", closing)
    else:
        closing = []
    return StructuredPlan("json_schema", response_format={"name": spec.name, "schema": schema, "strict": strict},
                          changes=(*reduced, *closing), instructions=reminder(spec))


def openai_structured_plan(spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
    if capabilities.output_mode != "json_schema":
        return default_plan(spec, capabilities, model)
    try:
        return strict_json_schema_plan(spec)
    except ToolSchemaError as error:
        raise CapabilityMismatchError(model, "structured_output_mode",
                                      f"the output schema cannot travel as json_schema: {error}") from None
