"""How OpenRouter carries an output schema: OpenAI's `response_format` passed through to the upstream.

`provider.require_parameters: true` makes OpenRouter route only to upstreams that honour
`response_format`, instead of silently dropping it on one that does not.
"""

from __future__ import annotations

from metis_core.adapters.openai_chat.structured import openai_structured_plan
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.structured.plan import StructuredPlan
from metis_core.structured.spec import OutputSpec


def openrouter_structured_plan(spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
    plan = openai_structured_plan(spec, capabilities, model)
    if plan.mode == "json_schema":
        plan.extra = {"provider": {"require_parameters": True}}
    return plan
