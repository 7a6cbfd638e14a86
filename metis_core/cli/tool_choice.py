"""Which tools a command offers the model: all of them, none (`--no-tools`), or the ones named.

Names may be repeated (`--tools read_file --tools search_files`) or comma-separated; an unknown
name is refused with the list of known ones, before anything is sent.
"""

from __future__ import annotations

from metis_core.agent.tools.registry import ToolRegistry
from metis_core.cli.exit_codes import UsageProblem


def chosen_tools(registry: ToolRegistry, *, no_tools: bool = False, names: list[str] | None = None) -> ToolRegistry:
    if no_tools and names:
        raise UsageProblem("give --no-tools or --tools, not both")
    if not no_tools and not names:
        return registry
    chosen = ToolRegistry()
    wanted = [name.strip() for group in names or [] for name in group.split(",") if name.strip()]
    for name in wanted:
        tool = registry.get(name)
        if tool is None:
            raise UsageProblem(f"no tool named {name!r}; the tools are {', '.join(registry.names())}")
        chosen.register(tool)
    return chosen
