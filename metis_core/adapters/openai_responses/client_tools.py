"""Client-run shell items of the Responses API <-> canonical `run_command` tool calls.

A `local_shell_call`, or a `shell_call` with no hosted container `environment`, asks the caller to
run a command: it becomes a tool_use named `run_command` (the agent's own tool, so it runs in the
workspace with confirmation). The item is kept whole in provider_raw and replayed verbatim; the
tool result goes back as `local_shell_call_output` / `shell_call_output` with the item's call_id.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from metis_core.adapters.openai_responses.errors import PROVIDER
from metis_core.errors import MalformedResponseError

SHELL_TOOL = "run_command"
"""The canonical tool that runs a client shell call (metis_core.agent.tools.command.RunCommand)."""
MAX_TIMEOUT_SECONDS = 600.0
"""run_command's own ceiling: a longer `timeout_ms` is clamped so the call stays valid input."""
_EXIT_LINE = re.compile(r"exit code (-?\d+)\n")


def is_client_shell(item: dict[str, Any]) -> bool:
    """A shell call the caller runs: every local_shell_call; a shell_call without a hosted container."""
    kind = item.get("type")
    if kind == "local_shell_call":
        return True
    if kind != "shell_call":
        return False
    environment = item.get("environment")
    return not isinstance(environment, dict) or environment.get("type") == "local"


def shell_input(item: dict[str, Any], position: int) -> tuple[str, dict[str, Any]]:
    """(call_id, run_command input) of a client shell item; a named error for one that cannot run."""
    kind = item.get("type")
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise MalformedResponseError(
            f"output[{position}] ({kind}) has no call_id, so its output could not be sent back; "
            "the item is malformed, retry the request",
            provider=PROVIDER,
        )
    given = item.get("action")
    action: dict[str, Any] = given if isinstance(given, dict) else {}
    if kind == "local_shell_call":
        argv = action.get("command")
        parts = [part for part in argv if isinstance(part, str)] if isinstance(argv, list) else []
        command = shlex.join(parts) if parts and any(part.strip() for part in parts) else ""
    else:
        commands = action.get("commands")
        listed = commands if isinstance(commands, list) else []
        lines = [line for line in listed if isinstance(line, str) and line.strip()]
        command = "\n".join(lines)
    if not command:
        raise MalformedResponseError(
            f"output[{position}] ({kind}) carries an empty command; nothing can be run for it, retry the request",
            provider=PROVIDER,
        )
    tool_input: dict[str, Any] = {"command": command}
    timeout_ms = action.get("timeout_ms")
    if isinstance(timeout_ms, int | float) and not isinstance(timeout_ms, bool) and timeout_ms > 0:
        tool_input["timeout_seconds"] = min(max(1.0, timeout_ms / 1000), MAX_TIMEOUT_SECONDS)
    return call_id, tool_input


def output_item(kind: str, call_id: str, text: str, is_error: bool, call: dict[str, Any]) -> dict[str, Any]:
    """The `*_output` item for the result of a client shell call of type `kind`."""
    if kind == "local_shell_call":
        return {"type": "local_shell_call_output", "call_id": call_id, "output": text}
    match = _EXIT_LINE.match(text)
    if match is not None:
        outcome: dict[str, Any] = {"type": "exit", "exit_code": int(match.group(1))}
        stdout = text[match.end():]
    elif "timed out" in text:
        outcome, stdout = {"type": "timeout"}, text
    else:  # refused, failed to start, or an unexpected body: the text says why
        outcome, stdout = {"type": "exit", "exit_code": 1 if is_error else 0}, text
    item: dict[str, Any] = {
        "type": "shell_call_output",
        "call_id": call_id,
        "output": [{"stdout": stdout, "stderr": "", "outcome": outcome}],
    }
    action = call.get("action")
    if isinstance(action, dict) and isinstance(action.get("max_output_length"), int):
        item["max_output_length"] = action["max_output_length"]
    return item
