"""The configured MCP servers of one Runtime: connect them, offer their tools, close them.

A server that fails to start is reported (`status()`, a warning in the log) and its tools are
simply absent; the other servers and the built-in tools work as before. Tools whose schemas
cannot be made portable are skipped and listed with the reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from metis_core.agent.mcp.connection import McpConnection
from metis_core.agent.mcp.tools import McpTool, SkippedTool, build_tools
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.agent_config import McpServerConfig
from metis_core.errors import McpServerError

log = logging.getLogger("metis_core.agent.mcp")


@dataclass
class ServerStatus:
    name: str
    transport: str
    target: str
    """The command line or URL (never the env or headers)."""
    connected: bool = False
    error: str | None = None
    tools: list[McpTool] = field(default_factory=list)
    skipped: list[SkippedTool] = field(default_factory=list)
    server_version: str | None = None


class McpHub:
    def __init__(self, servers: dict[str, McpServerConfig], *, log_dir: Path | None = None) -> None:
        self.servers = {name: config for name, config in servers.items() if config.enabled}
        self.log_dir = log_dir
        self.connections: dict[str, McpConnection] = {}
        self.statuses: dict[str, ServerStatus] = {}

    def start(self) -> list[ServerStatus]:
        """Connect every enabled server (one after another; each bounded by its connect timeout)."""
        for name, config in self.servers.items():
            status = ServerStatus(name, "http" if config.url else "stdio",
                                  config.url or " ".join([config.command or "", *config.args]))
            self.statuses[name] = status
            connection = McpConnection(name, config, log_dir=self.log_dir)
            try:
                remote = connection.start()
            except McpServerError as error:
                status.error = str(error)
                log.warning("%s; its tools are not offered", error)
                continue
            self.connections[name] = connection
            status.connected = True
            status.server_version = connection.server_version
            status.tools, status.skipped = build_tools(connection, remote)
            for skipped in status.skipped:
                log.warning("MCP tool %s of server %r not offered: %s", skipped.tool, name, skipped.reason)
        return list(self.statuses.values())

    def tools(self) -> list[McpTool]:
        return [tool for status in self.statuses.values() for tool in status.tools]

    def register_into(self, registry: ToolRegistry) -> None:
        for tool in self.tools():
            registry.register(tool)

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()
