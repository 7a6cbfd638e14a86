"""current_time: the current date and time, in UTC and the machine's local zone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.messages import SideEffects, ToolDefinition


class CurrentTime:
    definition = ToolDefinition(
        name="current_time",
        description="The current date and time (ISO 8601, UTC and local).",
        input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        side_effects=SideEffects.NONE,
        requires_workspace=False,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        now = datetime.now(UTC)
        local = now.astimezone().isoformat(timespec="seconds")
        return ToolOutcome(f"utc: {now.isoformat(timespec='seconds')}\nlocal: {local}")
