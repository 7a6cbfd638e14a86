"""run_command: a shell command in the workspace, with a timeout and a capped output.

The command runs in its own process group so a timeout or a cancellation kills everything it
started. Output beyond the cap is cut with a note; the exit code is reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

from metis_core.agent.tools.base import ToolContext, ToolOutcome, cap_output
from metis_core.messages import SideEffects, ToolDefinition

MAX_TIMEOUT_SECONDS = 600.0


class RunCommand:
    definition = ToolDefinition(
        name="run_command",
        description="Run a shell command in the workspace directory. Output is capped; long runs time out.",
        input_schema={
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout_seconds": {"type": "number", "minimum": 1, "maximum": MAX_TIMEOUT_SECONDS},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
        side_effects=SideEffects.EXECUTE,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        command = tool_input["command"]
        timeout = min(float(tool_input.get("timeout_seconds", context.command_timeout_seconds)), MAX_TIMEOUT_SECONDS)
        process = await asyncio.create_subprocess_shell(
            command,
            cwd=context.workspace,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            output, _ = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            _kill_group(process)
            await process.wait()
            return ToolOutcome.failure(
                "timeout", f"command timed out after {timeout:g}s and was killed", command_executed=command
            )
        except asyncio.CancelledError:
            _kill_group(process)
            await process.wait()
            raise
        text = cap_output(output.decode("utf-8", "replace"), context.max_output_bytes)
        body = f"exit code {process.returncode}\n{text}"
        if process.returncode != 0:
            return ToolOutcome(body, is_error=True, error_class="execution_error", command_executed=command)
        return ToolOutcome(body, command_executed=command)


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
