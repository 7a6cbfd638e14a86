"""File tools: read_file, list_directory, write_file, edit_file — all confined to the workspace."""

from __future__ import annotations

from typing import Any

from metis_core.agent.tools.base import ToolContext, ToolOutcome, cap_output
from metis_core.agent.tools.workspace import confine, display
from metis_core.errors import PathEscapeError
from metis_core.messages import SideEffects, ToolDefinition

_PATH = {"type": "string", "description": "Path relative to the workspace root."}


class ReadFile:
    definition = ToolDefinition(
        name="read_file",
        description="Read a UTF-8 text file from the workspace. Large files are truncated.",
        input_schema={"type": "object", "properties": {"path": _PATH}, "required": ["path"],
                      "additionalProperties": False},
        side_effects=SideEffects.READ,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            path = confine(context.workspace, tool_input["path"])
        except PathEscapeError as exc:
            return ToolOutcome.failure("permission_denied", str(exc))
        if not path.is_file():
            return ToolOutcome.failure("not_found", f"no file at {tool_input['path']!r}")
        data = path.read_bytes()
        if b"\x00" in data[:8192]:
            return ToolOutcome.failure("execution_error", f"{tool_input['path']!r} is a binary file")
        return ToolOutcome(cap_output(data.decode("utf-8", "replace"), context.max_output_bytes))


class ListDirectory:
    definition = ToolDefinition(
        name="list_directory",
        description="List the entries of a workspace directory (directories end with '/').",
        input_schema={"type": "object", "properties": {"path": _PATH}, "additionalProperties": False},
        side_effects=SideEffects.READ,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            path = confine(context.workspace, tool_input.get("path", "."))
        except PathEscapeError as exc:
            return ToolOutcome.failure("permission_denied", str(exc))
        if not path.is_dir():
            return ToolOutcome.failure("not_found", f"no directory at {tool_input.get('path', '.')!r}")
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
        return ToolOutcome(cap_output("\n".join(names) or "(empty)", context.max_output_bytes))


class WriteFile:
    definition = ToolDefinition(
        name="write_file",
        description="Create or overwrite a text file in the workspace with the given content.",
        input_schema={"type": "object", "properties": {"path": _PATH, "content": {"type": "string"}},
                      "required": ["path", "content"], "additionalProperties": False},
        side_effects=SideEffects.WRITE,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            path = confine(context.workspace, tool_input["path"])
        except PathEscapeError as exc:
            return ToolOutcome.failure("permission_denied", str(exc))
        if path.is_dir():
            return ToolOutcome.failure("execution_error", f"{tool_input['path']!r} is a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.metis-tmp")
        tmp.write_text(tool_input["content"], encoding="utf-8")
        tmp.replace(path)  # atomic: a reader never sees half a file
        shown = display(context.workspace, path)
        return ToolOutcome(f"wrote {len(tool_input['content'].encode())} bytes to {shown}", files_modified=[shown])


class EditFile:
    definition = ToolDefinition(
        name="edit_file",
        description="Replace one exact occurrence of old_text with new_text in a workspace file.",
        input_schema={
            "type": "object",
            "properties": {"path": _PATH, "old_text": {"type": "string"}, "new_text": {"type": "string"}},
            "required": ["path", "old_text", "new_text"],
            "additionalProperties": False,
        },
        side_effects=SideEffects.WRITE,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            path = confine(context.workspace, tool_input["path"])
        except PathEscapeError as exc:
            return ToolOutcome.failure("permission_denied", str(exc))
        if not path.is_file():
            return ToolOutcome.failure("not_found", f"no file at {tool_input['path']!r}")
        text = path.read_text(encoding="utf-8")
        count = text.count(tool_input["old_text"]) if tool_input["old_text"] else 0
        if count != 1:
            found = "not found" if count == 0 else f"found {count} times"
            return ToolOutcome.failure(
                "validation_error", f"old_text must occur exactly once in {tool_input['path']!r}, {found}"
            )
        tmp = path.with_name(f".{path.name}.metis-tmp")
        tmp.write_text(text.replace(tool_input["old_text"], tool_input["new_text"], 1), encoding="utf-8")
        tmp.replace(path)
        shown = display(context.workspace, path)
        return ToolOutcome(f"edited {shown}", files_modified=[shown])
