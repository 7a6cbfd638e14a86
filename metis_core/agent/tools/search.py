"""search_files: a regular-expression search over the workspace's text files (bounded)."""

from __future__ import annotations

import re
from typing import Any

from metis_core.agent.tools.base import ToolContext, ToolOutcome, cap_output
from metis_core.agent.tools.workspace import confine, display
from metis_core.errors import PathEscapeError
from metis_core.messages import SideEffects, ToolDefinition

MAX_MATCHES = 200
MAX_FILE_BYTES = 2 * 1024 * 1024
SKIPPED_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__", ".mypy_cache"})


class SearchFiles:
    definition = ToolDefinition(
        name="search_files",
        description="Search workspace text files for a regular expression; returns path:line: text.",
        input_schema={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Python regular expression."},
                "path": {"type": "string", "description": "Directory to search, relative to the workspace."},
                "glob": {"type": "string", "description": "File name filter such as *.py."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        side_effects=SideEffects.READ,
    )

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            regex = re.compile(tool_input["pattern"])
        except re.error as exc:
            return ToolOutcome.failure("validation_error", f"invalid pattern: {exc}")
        try:
            base = confine(context.workspace, tool_input.get("path", "."))
        except PathEscapeError as exc:
            return ToolOutcome.failure("permission_denied", str(exc))
        root = context.workspace.resolve()
        lines: list[str] = []
        for file in sorted(base.rglob(tool_input.get("glob", "*"))):
            if len(lines) >= MAX_MATCHES:
                lines.append(f"[stopped after {MAX_MATCHES} matches]")
                break
            if SKIPPED_DIRS.intersection(file.relative_to(base).parts) or not file.is_file():
                continue
            resolved = file.resolve()
            if not resolved.is_relative_to(root) or file.stat().st_size > MAX_FILE_BYTES:
                continue  # symlinks out of the workspace are not followed
            try:
                text = file.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    lines.append(f"{display(context.workspace, resolved)}:{number}: {line.strip()[:300]}")
                    if len(lines) >= MAX_MATCHES:
                        break
        return ToolOutcome(cap_output("\n".join(lines) or "no matches", context.max_output_bytes))
