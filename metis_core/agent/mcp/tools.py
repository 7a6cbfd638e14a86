"""An MCP server's tool as a metis tool: name, portable schema, side effects, and the call.

A tool is offered as `<server>__<tool>` so names from different servers never collide with each
other or with the built-ins. Its input schema goes through ToolDefinition, which normalizes it into
the portable subset (messages/schema_normalize.py) exactly as for any other tool; a tool whose
schema cannot be carried is skipped with its reason, never offered half-described.
Results become text: text blocks joined, other blocks summarised; `isError` becomes a tool error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from metis_core.agent.mcp.connection import McpCallTimeout, McpConnection, McpServerGone
from metis_core.agent.tools.base import ToolContext, ToolOutcome, cap_output
from metis_core.errors import ToolSchemaError
from metis_core.messages import SideEffects, ToolDefinition

if TYPE_CHECKING:
    from mcp.types import CallToolResult, Tool

NAME_SEPARATOR = "__"
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

@dataclass(frozen=True, slots=True)
class SkippedTool:
    server: str
    tool: str
    reason: str


class McpTool:
    """A Tool (agent/tools/base.py) that runs on an MCP server."""

    def __init__(self, connection: McpConnection, remote_name: str, definition: ToolDefinition) -> None:
        self.connection = connection
        self.remote_name = remote_name
        self.definition = definition

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        server = self.connection.name
        timeout = self.connection.config.call_timeout_seconds
        try:
            result = await self.connection.call_tool(self.remote_name, tool_input, timeout)
        except McpCallTimeout:
            return ToolOutcome.failure("timeout", f"MCP server {server!r} did not answer {self.remote_name} "
                                                  f"within {timeout:g}s; the call was cancelled")
        except McpServerGone as gone:
            return ToolOutcome.failure("execution_error", f"MCP server {server!r} is not running ({gone}); "
                                                          "the call was not retried")
        text = cap_output(result_text(result), context.max_output_bytes)
        if result.is_error:
            return ToolOutcome.failure("execution_error", f"{self.remote_name} on MCP server {server!r} failed: "
                                                          f"{text}")
        return ToolOutcome(text)


def result_text(result: CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}: {len(getattr(block, 'data', '') or '')} "
                         "base64 characters not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource {getattr(block, 'uri', '')}]")
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            parts.append(str(getattr(resource, "text", "")) or f"[resource {getattr(resource, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'unknown'} content not shown]")
    if not parts and result.structured_content is not None:
        import orjson

        parts.append(orjson.dumps(result.structured_content).decode())
    return "\n".join(parts) or "(no output)"


def tool_name_for(server: str, remote: str) -> str:
    return f"{server}{NAME_SEPARATOR}{remote}"


def build_tools(connection: McpConnection, remote_tools: list[Tool]) -> tuple[list[McpTool], list[SkippedTool]]:
    """metis tools for a server's listing, and the ones skipped with their reasons."""
    config = connection.config
    tools: list[McpTool] = []
    skipped: list[SkippedTool] = []
    for remote in remote_tools:
        name = tool_name_for(connection.name, remote.name)
        if not _TOOL_NAME.match(name):
            skipped.append(SkippedTool(connection.name, remote.name, f"the name {name!r} is not a valid tool "
                                       "name (letters, digits, '_' or '-', at most 64)"))
            continue
        side_effects = SideEffects(config.tool_side_effects.get(remote.name, config.side_effects))
        try:
            definition = ToolDefinition(
                name=name, description=(remote.description or remote.title or remote.name)[:1024],
                input_schema=dict(remote.input_schema), side_effects=side_effects, requires_workspace=False,
            )
        except ToolSchemaError as error:
            skipped.append(SkippedTool(connection.name, remote.name, f"schema outside the portable subset: {error}"))
            continue
        except ValueError as error:  # pydantic wraps the schema error raised in ToolDefinition's validator
            skipped.append(SkippedTool(connection.name, remote.name, f"schema outside the portable subset: "
                                       f"{_first_line(error)}"))
            continue
        tools.append(McpTool(connection, remote.name, definition))
    return tools, skipped


def _first_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[1] if len(lines) > 1 else (lines[0] if lines else type(error).__name__)
