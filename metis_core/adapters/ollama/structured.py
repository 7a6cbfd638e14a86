"""How Ollama's /api/chat carries an output schema: `format` set to the JSON Schema (grammar-constrained).

The schema is reduced into the portable subset; local models follow it token by token, so the
usual failure is truncation at `num_predict`, which the driver retries with the budget doubled.
"""

from __future__ import annotations

from metis_core.models.capabilities import AdapterCapabilities
from metis_core.structured.plan import StructuredPlan, default_plan
from metis_core.structured.spec import OutputSpec


def ollama_structured_plan(spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
    return default_plan(spec, capabilities, model)
