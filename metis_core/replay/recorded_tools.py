"""Tools served from the recording: a replayed tool call gets the result the original call got.

A call matches a recorded one by tool name and exactly equal arguments (the first unused match,
then any match); nothing is executed, so no confirmation is asked. A call the recording does not
hold gets an error result saying so (the model sees it, the comparison shows the divergence).
"""

from __future__ import annotations

from typing import Any

from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.messages import SideEffects, ToolDefinition
from metis_core.replay.source import RecordedToolResult


class RecordedToolLog:
    def __init__(self, results: list[RecordedToolResult]) -> None:
        self.results = results
        self.used = [False] * len(results)
        self.served = 0
        self.unmatched = 0

    def take(self, name: str, arguments: dict[str, Any]) -> RecordedToolResult | None:
        matches = [i for i, r in enumerate(self.results) if r.name == name and r.arguments == arguments]
        fresh = [i for i in matches if not self.used[i]]
        chosen = fresh[0] if fresh else matches[0] if matches else None
        if chosen is None:
            self.unmatched += 1
            return None
        self.used[chosen] = True
        self.served += 1
        return self.results[chosen]


class RecordedTool:
    def __init__(self, definition: ToolDefinition, log: RecordedToolLog) -> None:
        self.definition = definition
        self.log = log

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        found = self.log.take(self.definition.name, tool_input)
        if found is None:
            return ToolOutcome.failure(
                "not_found", f"replay: the recording holds no result for {self.definition.name} with these "
                "arguments (rerun with --live-tools to execute tools)")
        error_class = "execution_error" if found.is_error else None
        return ToolOutcome(found.text, is_error=found.is_error, error_class=error_class)


def recorded_registry(live: ToolRegistry, log: RecordedToolLog) -> ToolRegistry:
    """The live tools' definitions, each answered from the log; tools only the recording knows are added."""
    tools: list[RecordedTool] = []
    for definition in live.definitions():
        served = definition.model_copy(update={"side_effects": SideEffects.NONE, "requires_workspace": False})
        tools.append(RecordedTool(served, log))
    known = {t.definition.name for t in tools}
    for result in log.results:
        if result.name not in known:
            known.add(result.name)
            tools.append(RecordedTool(ToolDefinition(
                name=result.name, description=f"{result.name} (answered from the recording)",
                input_schema={"type": "object", "properties": {}}, side_effects=SideEffects.NONE,
                requires_workspace=False), log))
    return ToolRegistry(tools)
