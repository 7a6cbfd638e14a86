"""How generateContent carries an output schema: `responseMimeType: application/json` + `responseJsonSchema`.

`responseJsonSchema` takes JSON Schema itself (the older `responseSchema` takes the OpenAPI dialect of
gemini/schema.py), so the schema is only reduced into the portable subset. A safety block comes back
as a refusal stop reason and is never retried.
"""

from __future__ import annotations

from metis_core.models.capabilities import AdapterCapabilities
from metis_core.structured.plan import StructuredPlan, default_plan
from metis_core.structured.spec import OutputSpec


def gemini_structured_plan(spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
    return default_plan(spec, capabilities, model)
