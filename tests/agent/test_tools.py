"""Built-in tools: confinement to the workspace, output caps, timeouts, and honest outcomes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metis_core.agent.tools import ToolContext, ToolRegistry
from metis_core.agent.tools.command import RunCommand
from metis_core.agent.tools.files import EditFile, ListDirectory, ReadFile, WriteFile
from metis_core.agent.tools.search import SearchFiles
from metis_core.agent.tools.workspace import confine
from metis_core.errors import PathEscapeError, ToolError


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Project Foo\nA tool for things.\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("def main():\n    return 42\n")
    (tmp_path / "secret.txt").write_text("outside")
    return ToolContext(workspace=workspace)


@pytest.mark.parametrize("escape", ["../secret.txt", "src/../../secret.txt", "/etc/passwd"])
async def test_paths_that_escape_the_workspace_are_refused(ctx: ToolContext, escape: str) -> None:
    outcome = await ReadFile().run({"path": escape}, ctx)
    assert outcome.is_error and outcome.error_class == "permission_denied"
    assert "outside the workspace" in outcome.content


async def test_symlink_out_of_the_workspace_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    os.symlink(tmp_path / "secret.txt", ctx.workspace / "link.txt")
    outcome = await ReadFile().run({"path": "link.txt"}, ctx)
    assert outcome.error_class == "permission_denied"
    write = await WriteFile().run({"path": "link.txt", "content": "pwned"}, ctx)
    assert write.error_class == "permission_denied"
    assert (tmp_path / "secret.txt").read_text() == "outside"
    search = await SearchFiles().run({"pattern": "outside"}, ctx)
    assert search.content == "no matches"


def test_confine_accepts_the_root_and_new_files() -> None:
    root = Path.cwd()
    assert confine(root, ".") == root.resolve()
    assert confine(root, "new/dir/file.txt") == root.resolve() / "new/dir/file.txt"
    with pytest.raises(PathEscapeError):
        confine(root, "..")


async def test_read_list_write_edit(ctx: ToolContext) -> None:
    assert "Project Foo" in (await ReadFile().run({"path": "README.md"}, ctx)).content
    assert (await ListDirectory().run({}, ctx)).content.splitlines() == ["README.md", "src/"]
    written = await WriteFile().run({"path": "notes/todo.txt", "content": "one\n"}, ctx)
    assert written.files_modified == ["notes/todo.txt"] and not written.is_error
    edited = await EditFile().run({"path": "notes/todo.txt", "old_text": "one", "new_text": "two"}, ctx)
    assert not edited.is_error and (ctx.workspace / "notes/todo.txt").read_text() == "two\n"


async def test_edit_needs_exactly_one_occurrence(ctx: ToolContext) -> None:
    (ctx.workspace / "dup.txt").write_text("x x")
    outcome = await EditFile().run({"path": "dup.txt", "old_text": "x", "new_text": "y"}, ctx)
    assert outcome.error_class == "validation_error" and "found 2 times" in outcome.content
    assert (ctx.workspace / "dup.txt").read_text() == "x x"


async def test_missing_file_is_not_found(ctx: ToolContext) -> None:
    outcome = await ReadFile().run({"path": "nope.txt"}, ctx)
    assert outcome.error_class == "not_found"


async def test_search_finds_lines_with_paths(ctx: ToolContext) -> None:
    outcome = await SearchFiles().run({"pattern": r"return \d+", "glob": "*.py"}, ctx)
    assert outcome.content == "src/main.py:2: return 42"
    bad = await SearchFiles().run({"pattern": "("}, ctx)
    assert bad.error_class == "validation_error"


async def test_command_output_is_capped(ctx: ToolContext) -> None:
    small = ToolContext(workspace=ctx.workspace, max_output_bytes=1000)
    outcome = await RunCommand().run({"command": "yes hello | head -c 50000"}, small)
    assert "[output truncated: 49000 of 50000 bytes not shown]" in outcome.content
    assert len(outcome.content) < 1200 and outcome.command_executed


async def test_command_timeout_kills_the_process(ctx: ToolContext) -> None:
    outcome = await RunCommand().run({"command": "sleep 30; echo never", "timeout_seconds": 1}, ctx)
    assert outcome.error_class == "timeout" and "timed out after 1s" in outcome.content


async def test_command_runs_in_the_workspace_and_reports_exit_code(ctx: ToolContext) -> None:
    ok = await RunCommand().run({"command": "ls src"}, ctx)
    assert ok.content.startswith("exit code 0") and "main.py" in ok.content
    failed = await RunCommand().run({"command": "exit 3"}, ctx)
    assert failed.is_error and failed.content.startswith("exit code 3")


def test_registry_refuses_duplicate_names() -> None:
    registry = ToolRegistry.with_builtins()
    assert registry.names() == ["read_file", "list_directory", "search_files", "write_file", "edit_file",
                                "run_command", "current_time"]
    with pytest.raises(ToolError, match="already registered"):
        registry.register(ReadFile())
