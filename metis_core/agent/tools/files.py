"""File tools: read_file, list_directory, write_file, edit_file — all confined to the workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metis_core.agent.tools.base import ToolContext, ToolOutcome, cap_output
from metis_core.agent.tools.file_io import NotARegularFileError, read_head, write_atomically
from metis_core.agent.tools.workspace import confine, display
from metis_core.errors import InvalidToolPathError, PathEscapeError
from metis_core.messages import SideEffects, ToolDefinition

_PATH = {"type": "string", "description": "Path relative to the workspace root."}


def confined(context: ToolContext, relative: str) -> Path | ToolOutcome:
    """The confined path, or the failure outcome to hand back to the model."""
    try:
        return confine(context.workspace, relative)
    except PathEscapeError as exc:
        return ToolOutcome.failure("permission_denied", str(exc))
    except InvalidToolPathError as exc:
        return ToolOutcome.failure("validation_error", str(exc))


def _write(context: ToolContext, relative: str, path: Path, text: str) -> ToolOutcome | None:
    """Write through the confined atomic writer; a refusal becomes a failure outcome."""
    try:
        write_atomically(context.workspace, relative, path, text.encode("utf-8"))
    except PathEscapeError as exc:
        return ToolOutcome.failure("permission_denied", str(exc))
    except NotARegularFileError as exc:
        return ToolOutcome.failure("execution_error", str(exc))
    except OSError as exc:
        return ToolOutcome.failure("execution_error", f"could not write {relative!r}: {exc.strerror or exc}")
    return None


def _decode_head(data: bytes, truncated: bool) -> str:
    """Decode the bytes read; a cut inside a multi-byte character drops that character only."""
    if truncated:
        lead = len(data) - 1
        while lead > 0 and len(data) - lead < 4 and data[lead] & 0xC0 == 0x80:
            lead -= 1
        if lead >= 0 and data and data[lead] >= 0xC0:
            needed = 2 if data[lead] < 0xE0 else 3 if data[lead] < 0xF0 else 4
            if len(data) - lead < needed:
                data = data[:lead]
    return data.decode("utf-8", "replace")


class ReadFile:
    definition = ToolDefinition(
        name="read_file",
        description="Read a UTF-8 text file from the workspace. Large files are truncated.",
        input_schema={"type": "object", "properties": {"path": _PATH}, "required": ["path"],
                      "additionalProperties": False},
        side_effects=SideEffects.READ,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        path = confined(context, tool_input["path"])
        if isinstance(path, ToolOutcome):
            return path
        if not path.exists():
            return ToolOutcome.failure("not_found", f"no file at {tool_input['path']!r}")
        limit = context.max_output_bytes
        try:
            head = read_head(path, limit)  # reads only what is returned, never a whole large file
        except NotARegularFileError as exc:
            return ToolOutcome.failure("execution_error", str(exc))
        except OSError as exc:
            return ToolOutcome.failure("execution_error", f"could not read {tool_input['path']!r}: {exc.strerror}")
        if b"\x00" in head.data[:8192]:
            return ToolOutcome.failure("execution_error", f"{tool_input['path']!r} is a binary file")
        truncated = head.total_bytes > len(head.data)
        text = _decode_head(head.data, truncated)
        if not truncated:
            return ToolOutcome(cap_output(text, limit))
        hidden = head.total_bytes - len(head.data)
        return ToolOutcome(f"{text}\n[output truncated: {hidden} of {head.total_bytes} bytes not shown]")


class ListDirectory:
    definition = ToolDefinition(
        name="list_directory",
        description="List the entries of a workspace directory (directories end with '/').",
        input_schema={"type": "object", "properties": {"path": _PATH}, "additionalProperties": False},
        side_effects=SideEffects.READ,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        path = confined(context, tool_input.get("path", "."))
        if isinstance(path, ToolOutcome):
            return path
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
        path = confined(context, tool_input["path"])
        if isinstance(path, ToolOutcome):
            return path
        if path.is_dir():
            return ToolOutcome.failure("execution_error", f"{tool_input['path']!r} is a directory")
        path.parent.mkdir(parents=True, exist_ok=True)
        failed = _write(context, tool_input["path"], path, tool_input["content"])  # atomic and confined
        if failed is not None:
            return failed
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
        path = confined(context, tool_input["path"])
        if isinstance(path, ToolOutcome):
            return path
        if not path.is_file():
            return ToolOutcome.failure("not_found", f"no file at {tool_input['path']!r}")
        text = path.read_text(encoding="utf-8")
        count = text.count(tool_input["old_text"]) if tool_input["old_text"] else 0
        if count != 1:
            found = "not found" if count == 0 else f"found {count} times"
            return ToolOutcome.failure(
                "validation_error", f"old_text must occur exactly once in {tool_input['path']!r}, {found}"
            )
        edited = text.replace(tool_input["old_text"], tool_input["new_text"], 1)
        failed = _write(context, tool_input["path"], path, edited)
        if failed is not None:
            return failed
        shown = display(context.workspace, path)
        return ToolOutcome(f"edited {shown}", files_modified=[shown])
