"""`metis mcp list`: the configured MCP servers, whether they start, and the tools they offer.

Connects each enabled server exactly as a session would (agent/mcp/hub.py), prints one table of
servers and one of tools (with side effects and whether they ask first), then disconnects.
Env values and headers are never printed.
"""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from metis_core.cli.failures import guarded
from metis_core.cli.output import Terminal
from metis_core.cli.runtime_setup import load_cli_config

app = typer.Typer(help="MCP servers configured under mcp_servers: in config.yaml.", no_args_is_help=True)


@app.command("list")
@guarded
def list_servers() -> None:
    """Connect each configured MCP server and list it with its tools."""
    from metis_core.agent.mcp.hub import McpHub

    config = load_cli_config()
    terminal = Terminal.open(config)
    if not config.mcp_servers:
        terminal.out.print(f"no MCP servers configured; add mcp_servers: to {config.path} (docs/mcp.md)",
                           markup=False)
        return
    hub = McpHub(config.mcp_servers, log_dir=config.home / "logs")
    try:
        statuses = hub.start()
    finally:
        hub.close()
    servers = Table()
    for column in ("server", "transport", "target", "status", "tools"):
        servers.add_column(column, overflow="fold")
    tools = Table()
    for column in ("tool", "side effects", "asks first", "description"):
        tools.add_column(column, overflow="fold")
    for status in statuses:
        state = Text("connected" if status.connected else f"failed: {status.error}")
        servers.add_row(status.name, status.transport, status.target, state,
                        f"{len(status.tools)}" + (f" ({len(status.skipped)} skipped)" if status.skipped else ""))
        for tool in status.tools:
            definition = tool.definition
            tools.add_row(definition.name, definition.side_effects.value,
                          "yes" if definition.needs_confirmation else "no", definition.description)
        for skipped in status.skipped:
            tools.add_row(f"{status.name}__{skipped.tool}", "-", "-", f"not offered: {skipped.reason}",
                          style="yellow")
    disabled = sorted(set(config.mcp_servers) - {s.name for s in statuses})
    terminal.out.print(servers, soft_wrap=False)
    if disabled:
        terminal.out.print(f"disabled: {', '.join(disabled)}", markup=False)
    terminal.out.print(tools, soft_wrap=False)
