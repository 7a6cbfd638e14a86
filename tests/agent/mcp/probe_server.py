"""A real MCP server for the tests, written with the official SDK (stdio, or streamable HTTP).

`python probe_server.py` serves over stdio; `python probe_server.py PORT` over streamable HTTP on
127.0.0.1:PORT/mcp. Tools: add, greet (a default), fail (raises), die (the process exits mid-call),
hang (sleeps), tally (a free-form object schema, outside the portable subset), whoami (reports the
environment variable and header the client was configured with).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("probe")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def greet(name: str, punctuation: str = "!") -> str:
    """Greet someone."""
    return f"hello {name}{punctuation}"


@app.tool()
def fail(reason: str) -> str:
    """Always raises."""
    raise ValueError(f"refusing: {reason}")


@app.tool()
def die() -> str:
    """The server process exits while this call is in flight."""
    os._exit(3)


@app.tool()
async def hang(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "woke up"


@app.tool()
def tally(counts: dict[str, int]) -> int:
    """Sum a free-form mapping (its schema has additionalProperties, outside the portable subset)."""
    return sum(counts.values())


@app.tool()
def whoami(ctx: Context) -> str:
    """What this server was started with."""
    header = ""
    request = getattr(ctx.request_context, "request", None)
    if request is not None:
        header = request.headers.get("x-probe-token", "")
    return f"env={os.environ.get('PROBE_TOKEN', '')} header={header}"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        app.run()
