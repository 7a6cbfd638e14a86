"""The tools a session offers the model, by name. A tool that declares no side effects is run as
possibly writing: it asks before each call until its author declares what it does. Tools a provider's
own tool asks for (apply_patch, or one registered with `register_provider_called`) run when called
but are never offered as function tools.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from metis_core.agent.tools.base import Tool
from metis_core.agent.tools.clock import CurrentTime
from metis_core.agent.tools.command import RunCommand
from metis_core.agent.tools.files import EditFile, ListDirectory, ReadFile, WriteFile
from metis_core.agent.tools.patch import ApplyPatch
from metis_core.agent.tools.search import SearchFiles
from metis_core.errors import ToolError
from metis_core.messages import SideEffects, ToolDefinition

log = logging.getLogger(__name__)

UNDECLARED_NOTE = (
    "{name} does not declare its side effects, so metis asks as if it writes; its author declares "
    "them with @tool(side_effects=\"none\" | \"read\" | \"write\" | \"execute\" | \"network\") or "
    "ToolDefinition(side_effects=...)")


PROVIDER_CALLED_TOOLS: dict[str, Tool] = {"apply_patch": ApplyPatch()}
"""Run when a provider's own tool calls them (a Responses `apply_patch_call` with `{type: apply_patch}`
among the provider tools), never offered to the model as function tools."""


def builtin_tools() -> list[Tool]:
    return [ReadFile(), ListDirectory(), SearchFiles(), WriteFile(), EditFile(), RunCommand(), CurrentTime()]


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._provider_called: dict[str, Tool] = dict(PROVIDER_CALLED_TOOLS)
        self._undeclared: set[str] = set()
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        name = tool.definition.name
        if name in self._tools:
            raise ToolError(f"a tool named {name!r} is already registered; tool names must be unique")
        self._declare(tool)
        self._tools[name] = tool

    def _declare(self, tool: Tool) -> None:
        name = tool.definition.name
        if not tool.definition.declares_side_effects and name not in self._undeclared:
            # Safe by default: run as writing (confirmation asked), and say how to declare it.
            tool.definition = tool.definition.model_copy(update={"side_effects": SideEffects.WRITE})
            self._undeclared.add(name)
            log.warning(UNDECLARED_NOTE.format(name=f"tool {name!r}"))

    def register_provider_called(self, tool: Tool) -> None:
        """Run `tool` when a provider's own tool calls it by name, without offering it to models as a
        function tool: e.g. a `computer` tool that answers a Responses `computer_call` with a screenshot."""
        name = tool.definition.name
        if name in self._tools:
            raise ToolError(f"a tool named {name!r} is already registered as a function tool; pick one")
        self._declare(tool)
        self._provider_called[name] = tool

    def undeclared_note(self, name: str) -> str | None:
        """Why `name` asks for confirmation though its author declared nothing, and how to declare it."""
        return UNDECLARED_NOTE.format(name=f"this tool ({name})") if name in self._undeclared else None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def for_call(self, name: str) -> Tool | None:
        """The tool that runs a call: a registered one, else one a provider's own tool calls (apply_patch)."""
        return self._tools.get(name) or self._provider_called.get(name)

    def definitions(self) -> list[ToolDefinition]:
        return [tool.definition for tool in self._tools.values()]

    def names(self) -> list[str]:
        return list(self._tools)

    def extended(self, tools: Iterable[Tool]) -> ToolRegistry:
        """A new registry with these tools after this one's (a session's own tools, e.g. skills)."""
        extended = ToolRegistry()
        extended._undeclared = set(self._undeclared)
        extended._provider_called = dict(self._provider_called)
        for tool in [*self._tools.values(), *tools]:
            extended.register(tool)
        return extended

    @classmethod
    def with_builtins(cls) -> ToolRegistry:
        return cls(builtin_tools())
