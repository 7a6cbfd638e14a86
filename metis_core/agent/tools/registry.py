"""The tools a session offers the model, by name."""

from __future__ import annotations

from collections.abc import Iterable

from metis_core.agent.tools.base import Tool
from metis_core.agent.tools.clock import CurrentTime
from metis_core.agent.tools.command import RunCommand
from metis_core.agent.tools.files import EditFile, ListDirectory, ReadFile, WriteFile
from metis_core.agent.tools.search import SearchFiles
from metis_core.errors import ToolError
from metis_core.messages import ToolDefinition


def builtin_tools() -> list[Tool]:
    return [ReadFile(), ListDirectory(), SearchFiles(), WriteFile(), EditFile(), RunCommand(), CurrentTime()]


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        name = tool.definition.name
        if name in self._tools:
            raise ToolError(f"a tool named {name!r} is already registered; tool names must be unique")
        self._tools[name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def definitions(self) -> list[ToolDefinition]:
        return [tool.definition for tool in self._tools.values()]

    def names(self) -> list[str]:
        return list(self._tools)

    def extended(self, tools: Iterable[Tool]) -> ToolRegistry:
        """A new registry with these tools after this one's (a session's own tools, e.g. skills)."""
        return ToolRegistry([*self._tools.values(), *tools])

    @classmethod
    def with_builtins(cls) -> ToolRegistry:
        return cls(builtin_tools())
