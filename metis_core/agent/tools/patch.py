"""apply_patch: create, update or delete one workspace file from a V4A diff (OpenAI's apply_patch tool).

Runs only when a provider's own `apply_patch` tool asks for it (a Responses `apply_patch_call`), so it
is never offered to models as a function tool (registry.PROVIDER_CALLED_TOOLS). Writes are confined
and atomic like write_file's and ask for confirmation first; a diff that does not apply writes nothing.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.agent.tools.file_io import NotARegularFileError, read_head
from metis_core.agent.tools.files import _write, confined
from metis_core.agent.tools.v4a_diff import PatchFormatError, apply_create, apply_update
from metis_core.agent.tools.workspace import display
from metis_core.messages import SideEffects, ToolDefinition

MAX_PATCHED_FILE_BYTES = 8 * 1024 * 1024
"""A file larger than this is not read whole into memory to patch it."""


class ApplyPatch:
    definition = ToolDefinition(
        name="apply_patch",
        description="Create, update or delete a workspace file from a V4A diff.",
        input_schema={
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": ["create_file", "update_file", "delete_file"]},
                "path": {"type": "string", "description": "Path relative to the workspace root."},
                "diff": {"type": "string"},
            },
            "required": ["operation", "path"],
            "additionalProperties": False,
        },
        side_effects=SideEffects.WRITE,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        operation, relative = tool_input["operation"], tool_input["path"]
        path = confined(context, relative)
        if isinstance(path, ToolOutcome):
            return path
        shown = display(context.workspace, path)
        if operation == "delete_file":
            if not path.is_file() or path.is_symlink():
                return ToolOutcome.failure("not_found", f"no file at {relative!r} to delete")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return ToolOutcome(f"deleted {shown}", files_modified=[shown])
        diff = tool_input.get("diff")
        if not isinstance(diff, str):
            return ToolOutcome.failure("validation_error", f"{operation} needs a diff")
        try:
            if operation == "create_file":
                if path.exists():
                    return ToolOutcome.failure("execution_error", f"{relative!r} already exists; update it instead")
                text = apply_create(diff)
            else:
                text = apply_update(self._read(relative, path), diff)
        except PatchFormatError as exc:
            return ToolOutcome.failure("validation_error", f"the patch for {relative!r} does not apply: {exc}")
        except (NotARegularFileError, FileNotFoundError, UnicodeDecodeError, ValueError) as exc:
            return ToolOutcome.failure("not_found" if isinstance(exc, FileNotFoundError) else "execution_error",
                                       f"cannot update {relative!r}: {exc}")
        if operation == "create_file":
            path.parent.mkdir(parents=True, exist_ok=True)
        failed = _write(context, relative, path, text)  # atomic and confined, re-checked at the write
        if failed is not None:
            return failed
        verb = "created" if operation == "create_file" else "updated"
        return ToolOutcome(f"{verb} {shown}", files_modified=[shown])

    @staticmethod
    def _read(relative: str, path: Any) -> str:
        head = read_head(path, MAX_PATCHED_FILE_BYTES)
        if head.total_bytes > len(head.data):
            raise ValueError(f"it is larger than {MAX_PATCHED_FILE_BYTES} bytes")
        return head.data.decode("utf-8")
