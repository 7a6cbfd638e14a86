"""Why a stdio MCP server went away: its exit status and the last lines it wrote to stderr.

The SDK's stdio client keeps the server process to itself, so `watch_processes` wraps its spawn
function once, handing each process to whichever connection is spawning it (a context variable:
every connection spawns from its own task). Without that hook (another SDK layout) the report
carries the stderr tail alone. Reading never fails: a missing log is simply not quoted.
"""

from __future__ import annotations

import contextvars
import time
from pathlib import Path
from typing import Any

TAIL_LINES = 3
TAIL_CHARS = 400
EXIT_WAIT_SECONDS = 1.0
_SPAWNING: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("mcp_spawning", default=None)


def watch_processes(into: list[Any]) -> None:
    """Processes the stdio client spawns from the current task are appended to `into`."""
    _install_hook()
    _SPAWNING.set(into)


def _install_hook() -> None:
    try:
        from mcp.client import stdio
    except ImportError:  # pragma: no cover - the dev install always has it
        return
    spawn = getattr(stdio, "_create_platform_compatible_process", None)
    if spawn is None or getattr(spawn, "_metis_watched", False):
        return

    async def spawn_watched(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        watching = _SPAWNING.get()
        if watching is not None:
            watching.append(process)
        return process

    spawn_watched._metis_watched = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = spawn_watched


def exit_status(process: Any, wait: float = EXIT_WAIT_SECONDS) -> int | None:
    """The process's exit status, waiting briefly for it to be reaped; None while it runs."""
    deadline = time.monotonic() + wait
    while True:
        status = getattr(process, "returncode", None)
        if status is not None or time.monotonic() >= deadline:
            return status if isinstance(status, int) else None
        time.sleep(0.05)


def stderr_tail(log: Path | None, offset: int) -> str:
    """The last lines the server wrote to its log since `offset`, joined by " | "."""
    if log is None:
        return ""
    try:
        with log.open("rb") as file:
            file.seek(offset)
            text = file.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    tail = " | ".join(lines[-TAIL_LINES:])
    return tail if len(tail) <= TAIL_CHARS else "…" + tail[-TAIL_CHARS:]


def crash_report(process: Any | None, log: Path | None, offset: int, *, wait: bool = True) -> str:
    """"exited with status 3; stderr: …", or what of it is known ("" when nothing is). `wait`: give
    the process a moment to be reaped (never on the server's own loop, which reaps it)."""
    parts = []
    status = exit_status(process, EXIT_WAIT_SECONDS if wait else 0.0) if process is not None else None
    if status is not None:
        parts.append(f"exited with status {status}" if status >= 0 else f"killed by signal {-status}")
    tail = stderr_tail(log, offset)
    if tail:
        parts.append(f"stderr: {tail}")
    return "; ".join(parts)
