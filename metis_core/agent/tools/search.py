"""search_files: a regular-expression search over the workspace's text files (bounded).

Patterns run on RE2 (google-re2), whose matching time is linear in the input, so no pattern can
backtrack catastrophically; RE2 has no backreferences or lookaround, and says so when asked for
them. The walk runs in a worker thread under a total time budget and stops between lines when the
turn is cancelled (Ctrl-C). It never follows links out of the workspace.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from metis_core.agent.tools.base import ToolContext, ToolOutcome, cap_output
from metis_core.agent.tools.files import confined
from metis_core.agent.tools.workspace import display
from metis_core.messages import SideEffects, ToolDefinition

MAX_MATCHES = 200
MAX_FILE_BYTES = 2 * 1024 * 1024
SEARCH_BUDGET_SECONDS = 10.0
SKIPPED_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__", ".mypy_cache"})



class PatternSyntaxError(ValueError):
    """RE2 does not accept the pattern; the message says why."""


def compile_pattern(pattern: str) -> Any:
    """The compiled RE2 pattern, or PatternSyntaxError for syntax RE2 does not accept."""
    import re2  # imported on first search: keeps it off the CLI's cold start

    options = re2.Options()
    options.log_errors = False  # a bad pattern is reported to the model, not printed on stderr
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        raise PatternSyntaxError(why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)) from None


class _Search:
    """One walk over the files under `base`, stoppable from another thread."""

    def __init__(self, regex: Any, workspace: Path, base: Path, glob: str, budget: float) -> None:
        self.regex = regex
        self.workspace = workspace
        self.base = base
        self.glob = glob
        self.deadline = time.monotonic() + budget
        self.budget = budget
        self.stop = threading.Event()

    def run(self) -> list[str]:
        root = self.workspace.resolve()
        lines: list[str] = []
        for file in sorted(self.base.rglob(self.glob)):
            if len(lines) >= MAX_MATCHES:
                lines.append(f"[stopped after {MAX_MATCHES} matches]")
                break
            if self._out_of_time(lines):
                break
            if SKIPPED_DIRS.intersection(file.relative_to(self.base).parts) or not file.is_file():
                continue
            resolved = file.resolve()
            if not resolved.is_relative_to(root) or file.stat().st_size > MAX_FILE_BYTES:
                continue  # symlinks out of the workspace are not followed
            try:
                text = file.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(text.splitlines(), 1):
                if self.stop.is_set() or (number % 256 == 0 and self._out_of_time(lines)):
                    return lines
                if self.regex.search(line):
                    lines.append(f"{display(self.workspace, resolved)}:{number}: {line.strip()[:300]}")
                    if len(lines) >= MAX_MATCHES:
                        break
        return lines

    def _out_of_time(self, lines: list[str]) -> bool:
        if self.stop.is_set():
            return True
        if time.monotonic() > self.deadline:
            lines.append(f"[stopped after {self.budget:g}s; narrow the path or glob for a complete search]")
            self.stop.set()
            return True
        return False


class SearchFiles:
    definition = ToolDefinition(
        name="search_files",
        description="Search workspace text files for a regular expression; returns path:line: text.",
        input_schema={
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression in RE2 syntax (no backreferences or lookaround).",
                },
                "path": {"type": "string", "description": "Directory to search, relative to the workspace."},
                "glob": {"type": "string", "description": "File name filter such as *.py."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        side_effects=SideEffects.READ,
    )

    def __init__(self, budget_seconds: float = SEARCH_BUDGET_SECONDS) -> None:
        self.budget_seconds = budget_seconds

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        try:
            regex = compile_pattern(tool_input["pattern"])
        except PatternSyntaxError as exc:
            return ToolOutcome.failure(
                "validation_error", f"invalid pattern: {exc} (RE2 syntax: no backreferences or lookaround)"
            )
        base = confined(context, tool_input.get("path", "."))
        if isinstance(base, ToolOutcome):
            return base
        search = _Search(regex, context.workspace, base, tool_input.get("glob", "*"), self.budget_seconds)
        try:
            lines = await asyncio.to_thread(search.run)
        finally:
            search.stop.set()  # a cancelled turn stops the worker at its next line
        return ToolOutcome(cap_output("\n".join(lines) or "no matches", context.max_output_bytes))
