"""Built-in tools and the tool registry. Every tool is confined to the session's workspace."""

from metis_core.agent.tools.base import Tool, ToolContext, ToolOutcome
from metis_core.agent.tools.registry import ToolRegistry, builtin_tools

__all__ = ["Tool", "ToolContext", "ToolOutcome", "ToolRegistry", "builtin_tools"]
