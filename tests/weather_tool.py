"""The `get_weather` tool the recorded Anthropic traffic calls, for tests that run the agent over it."""

from __future__ import annotations

from typing import Any

from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.messages import SideEffects, ToolDefinition


class WeatherTool:
    """The tool the recorded Anthropic traffic calls; a network side effect, so it asks first."""

    definition = ToolDefinition(
        name="get_weather",
        description="Current weather for a location.",
        input_schema={"type": "object", "properties": {"location": {"type": "string"},
                                                       "units": {"type": "string", "enum": ["c", "f"]}},
                      "required": ["location"], "additionalProperties": False},
        side_effects=SideEffects.NETWORK,
        requires_workspace=False,
    )

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        self.calls.append(tool_input)
        return ToolOutcome(f"{tool_input['location']}: 73°F, clear")
