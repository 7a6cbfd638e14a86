"""How the Messages API carries an output schema: `output_config.format` where the model has it, else a forced tool.

Native structured output decodes against closed objects, so objects that leave
`additionalProperties` unsaid are closed (recorded as lossy). Models without it get one tool whose
input schema is the output schema and `tool_choice` naming it (structured/plan.py `tool_plan`).
"""

from __future__ import annotations

from metis_core.adapters._common.strict_schema import closed_schema
from metis_core.errors import CapabilityMismatchError, ToolSchemaError
from metis_core.messages.schema_changes import SchemaChange, log_lossy_changes
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.structured.plan import StructuredPlan, default_plan, reduced_schema, reminder
from metis_core.structured.spec import OutputSpec


def anthropic_structured_plan(spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
    if capabilities.output_mode != "json_schema":
        return default_plan(spec, capabilities, model)
    try:
        schema, reduced = reduced_schema(spec)
    except ToolSchemaError as error:
        raise CapabilityMismatchError(model, "structured_output_mode",
                                      f"the output schema cannot travel as output_config.format: {error}") from None
    closing: list[SchemaChange] = []
    schema = closed_schema(schema, changes=closing)
    log_lossy_changes(f"output {spec.name}", closing)
    return StructuredPlan("json_schema", response_format={"name": spec.name, "schema": schema},
                          changes=(*reduced, *closing), instructions=reminder(spec))
