"""Client-run items of the Responses API <-> canonical tool calls, and their outputs back.

The caller, not OpenAI, carries these out: a `local_shell_call` or a `shell_call` without a hosted
container becomes a tool_use of `run_command` (the agent's own tool, run in the workspace with
confirmation); an `apply_patch_call` a tool_use of `apply_patch` (input: the operation, flat); a
`computer_call` a tool_use of `computer` (input: its action(s)), which the caller answers with a
screenshot. Each item is kept whole in provider_raw and replayed verbatim; the tool result goes back
as that item's `*_output` under its call_id. It does not run anything (agent/tools does).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from metis_core.adapters.openai_responses.errors import PROVIDER
from metis_core.errors import MalformedResponseError
from metis_core.messages import ImageBlock, ToolResultBlock

SHELL_TOOL = "run_command"
"""The canonical tool that runs a client shell call (metis_core.agent.tools.command.RunCommand)."""
PATCH_TOOL = "apply_patch"
"""The canonical tool that applies an `apply_patch_call` (metis_core.agent.tools.patch.ApplyPatch)."""
COMPUTER_TOOL = "computer"
"""A `computer_call`: metis drives no computer, so the caller answers it with a screenshot."""
CALL_TOOLS = {"local_shell_call": SHELL_TOOL, "shell_call": SHELL_TOOL, "apply_patch_call": PATCH_TOOL,
              "computer_call": COMPUTER_TOOL}
OUTPUT_KINDS = frozenset(f"{kind}_output" for kind in CALL_TOOLS)
MAX_TIMEOUT_SECONDS = 600.0
"""run_command's own ceiling: a longer `timeout_ms` is clamped so the call stays valid input."""
_EXIT_LINE = re.compile(r"exit code (-?\d+)\n")


def is_client_call(item: dict[str, Any]) -> bool:
    """An item the caller runs: a client shell call, an apply_patch_call or a computer_call."""
    kind = item.get("type")
    if kind == "shell_call":
        environment = item.get("environment")
        return not isinstance(environment, dict) or environment.get("type") == "local"
    return kind in CALL_TOOLS


def call_input(item: dict[str, Any], position: int) -> tuple[str, str, dict[str, Any]]:
    """(call_id, canonical tool name, tool input) of a client item; a named error for one that cannot run."""
    kind = str(item.get("type"))
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _malformed(position, kind, "has no call_id, so its output could not be sent back")
    if kind == "apply_patch_call":
        return call_id, PATCH_TOOL, _patch_input(item, position)
    if kind == "computer_call":
        return call_id, COMPUTER_TOOL, _computer_input(item)
    return call_id, SHELL_TOOL, _shell_input(item, position)


def _shell_input(item: dict[str, Any], position: int) -> dict[str, Any]:
    kind = item.get("type")
    given = item.get("action")
    action: dict[str, Any] = given if isinstance(given, dict) else {}
    if kind == "local_shell_call":
        argv = action.get("command")
        parts = [part for part in argv if isinstance(part, str)] if isinstance(argv, list) else []
        command = shlex.join(parts) if parts and any(part.strip() for part in parts) else ""
    else:
        commands = action.get("commands")
        listed = commands if isinstance(commands, list) else []
        command = "\n".join(line for line in listed if isinstance(line, str) and line.strip())
    if not command:
        raise _malformed(position, str(kind), "carries an empty command; nothing can be run for it")
    tool_input: dict[str, Any] = {"command": command}
    timeout_ms = action.get("timeout_ms")
    if isinstance(timeout_ms, int | float) and not isinstance(timeout_ms, bool) and timeout_ms > 0:
        tool_input["timeout_seconds"] = min(max(1.0, timeout_ms / 1000), MAX_TIMEOUT_SECONDS)
    return tool_input


def _patch_input(item: dict[str, Any], position: int) -> dict[str, Any]:
    operation = item.get("operation")
    kind = operation.get("type") if isinstance(operation, dict) else None
    path = operation.get("path") if isinstance(operation, dict) else None
    if kind not in ("create_file", "update_file", "delete_file") or not isinstance(path, str) or not path:
        raise _malformed(position, "apply_patch_call", "has no create_file / update_file / delete_file operation "
                         "with a path")
    assert isinstance(operation, dict)
    tool_input: dict[str, Any] = {"operation": kind, "path": path}
    if kind != "delete_file":
        diff = operation.get("diff")
        if not isinstance(diff, str):
            raise _malformed(position, "apply_patch_call", f"has a {kind} operation without a diff")
        tool_input["diff"] = diff
    return tool_input


def _computer_input(item: dict[str, Any]) -> dict[str, Any]:
    tool_input = {key: item[key] for key in ("action", "actions") if item.get(key) is not None}
    if item.get("pending_safety_checks"):
        tool_input["pending_safety_checks"] = item["pending_safety_checks"]
    return tool_input


def _malformed(position: int, kind: str, problem: str) -> MalformedResponseError:
    return MalformedResponseError(f"output[{position}] ({kind}) {problem}; the item is malformed, retry the request",
                                  provider=PROVIDER)


def item_from_input(kind: str, call_id: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """A client item rebuilt from its canonical input (no id or status), for a writer without the original."""
    if kind == "apply_patch_call":
        operation = {"type": tool_input.get("operation"), "path": tool_input.get("path")}
        if "diff" in tool_input:
            operation["diff"] = tool_input["diff"]
        return {"type": kind, "call_id": call_id, "operation": operation}
    if kind == "computer_call":
        actions = {k: v for k, v in tool_input.items() if k != "pending_safety_checks"}
        return {"type": kind, "call_id": call_id, **actions,
                "pending_safety_checks": tool_input.get("pending_safety_checks") or []}
    command = str(tool_input.get("command", ""))
    action: dict[str, Any]
    if kind == "local_shell_call":
        action = {"type": "exec", "command": shlex.split(command)}
    else:
        action = {"commands": command.split("\n")}
    if "timeout_seconds" in tool_input:
        action["timeout_ms"] = int(float(tool_input["timeout_seconds"]) * 1000)
    return {"type": kind, "call_id": call_id, "action": action}


def output_item(call: dict[str, Any], call_id: str, result: ToolResultBlock) -> dict[str, Any] | None:
    """The `*_output` item answering a client call with `result`; None for a computer call answered
    without a screenshot, which the API cannot take."""
    kind = call.get("type")
    text = result.text()
    if kind == "local_shell_call":
        return {"type": "local_shell_call_output", "call_id": call_id, "output": text}
    if kind == "apply_patch_call":
        return {"type": "apply_patch_call_output", "call_id": call_id,
                "status": "failed" if result.is_error else "completed", "output": text}
    if kind == "computer_call":
        image = next((part for part in result.content if isinstance(part, ImageBlock)), None)
        if image is None:
            return None
        source = image.source
        url = source.data if source.kind == "url" else f"data:{image.media_type};base64,{source.data}"
        return {"type": "computer_call_output", "call_id": call_id,
                "output": {"type": "computer_screenshot", "image_url": url}}
    return _shell_output(call, call_id, text, result.is_error)


def _shell_output(call: dict[str, Any], call_id: str, text: str, is_error: bool) -> dict[str, Any]:
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


def output_text(item: dict[str, Any]) -> str:
    """The text of a client `*_output` item, for the canonical tool result (the item itself is kept too)."""
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list):  # shell_call_output: one entry per command
        parts = []
        for entry in output:
            if isinstance(entry, dict):
                given = entry.get("outcome")
                outcome: dict[str, Any] = given if isinstance(given, dict) else {}
                head = f"exit code {outcome.get('exit_code')}\n" if outcome.get("type") == "exit" else "timed out\n"
                parts.append(head + str(entry.get("stdout") or "") + str(entry.get("stderr") or ""))
        return "".join(parts)
    return "" if output is None else str(output)
