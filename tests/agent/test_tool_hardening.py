"""Regression tests for the file and search tools under attack."""

from __future__ import annotations

import asyncio
import os
import time
import tracemalloc
from pathlib import Path

import pytest

from metis_core.agent.tools import ToolContext, file_io
from metis_core.agent.tools.files import EditFile, ListDirectory, ReadFile, WriteFile
from metis_core.agent.tools.search import SearchFiles


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.txt").write_text("precious\n")
    return ToolContext(workspace=workspace)


def _victim(ctx: ToolContext) -> Path:
    return ctx.workspace.parent / "outside" / "victim.txt"


async def test_a_symlink_planted_at_the_old_temporary_name_is_never_followed(ctx: ToolContext) -> None:
    # The exact attack of the issue: ln -s /outside/victim.txt ws/.notes.md.metis-tmp
    os.symlink(_victim(ctx), ctx.workspace / ".notes.md.metis-tmp")
    outcome = await WriteFile().run({"path": "notes.md", "content": "hello\n"}, ctx)
    assert not outcome.is_error, outcome.content
    assert _victim(ctx).read_text() == "precious\n"
    notes = ctx.workspace / "notes.md"
    assert not notes.is_symlink() and notes.read_text() == "hello\n"
    edited = await EditFile().run({"path": "notes.md", "old_text": "hello", "new_text": "bye"}, ctx)
    assert not edited.is_error and notes.read_text() == "bye\n" and not notes.is_symlink()
    assert _victim(ctx).read_text() == "precious\n"


async def test_the_temporary_has_a_random_name_and_leaves_nothing_behind(ctx: ToolContext) -> None:
    for _ in range(3):
        assert not (await WriteFile().run({"path": "a.txt", "content": "x"}, ctx)).is_error
    assert sorted(p.name for p in ctx.workspace.iterdir()) == ["a.txt"]


async def test_a_target_swapped_for_a_link_during_the_write_is_refused(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = ctx.workspace / "notes.md"
    notes.write_text("mine\n")
    real_fsync = os.fsync

    def swap_then_sync(fd: int) -> None:
        notes.unlink()
        os.symlink(_victim(ctx), notes)  # the race: the target becomes a link after confinement
        real_fsync(fd)

    monkeypatch.setattr(file_io.os, "fsync", swap_then_sync)
    outcome = await WriteFile().run({"path": "notes.md", "content": "pwned\n"}, ctx)
    assert outcome.error_class == "permission_denied" and "outside the workspace" in outcome.content
    assert _victim(ctx).read_text() == "precious\n"
    assert [p.name for p in ctx.workspace.iterdir()] == ["notes.md"]  # the temporary is gone


async def test_write_keeps_the_mode_of_the_file_it_replaces(ctx: ToolContext) -> None:
    script = ctx.workspace / "run.sh"
    script.write_text("echo 1\n")
    script.chmod(0o750)
    assert not (await WriteFile().run({"path": "run.sh", "content": "echo 2\n"}, ctx)).is_error
    assert script.stat().st_mode & 0o777 == 0o750


async def test_read_file_reads_only_what_it_returns(ctx: ToolContext) -> None:
    big = ctx.workspace / "big.log"
    with big.open("wb") as handle:  # a sparse 1 GiB file of zeros after one text line
        handle.write(b"first line\n")
        handle.truncate(1 << 30)
    (ctx.workspace / "text.log").write_bytes(b"line\n" * 400_000)
    tracemalloc.start()
    started = time.monotonic()
    outcome = await ReadFile().run({"path": "text.log"}, ctx)
    elapsed = time.monotonic() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert outcome.content.startswith("line\n")
    assert outcome.content.endswith(f"[output truncated: {2_000_000 - 65536} of 2000000 bytes not shown]")
    assert peak < 1_000_000 and elapsed < 1.0
    binary = await ReadFile().run({"path": "big.log"}, ctx)
    assert binary.error_class == "execution_error" and "binary" in binary.content


async def test_read_file_cuts_a_multibyte_character_cleanly(ctx: ToolContext) -> None:
    (ctx.workspace / "u.txt").write_text("é" * 40_000, encoding="utf-8")
    outcome = await ReadFile().run({"path": "u.txt"}, ctx)
    head = outcome.content.split("\n[output truncated")[0]
    assert set(head) == {"é"} and len(head) == 32_768
    (ctx.workspace / "v.txt").write_text("x" + "é" * 40_000, encoding="utf-8")
    odd = (await ReadFile().run({"path": "v.txt"}, ctx)).content.split("\n[output truncated")[0]
    assert odd == "x" + "é" * 32_767


async def test_read_file_refuses_fifos_without_blocking(ctx: ToolContext) -> None:
    os.mkfifo(ctx.workspace / "pipe")
    outcome = await asyncio.wait_for(ReadFile().run({"path": "pipe"}, ctx), timeout=5)
    assert outcome.error_class == "execution_error" and "FIFO" in outcome.content
    write = await WriteFile().run({"path": "pipe", "content": "x"}, ctx)
    assert write.is_error and "FIFO" in write.content


async def test_read_file_refuses_devices() -> None:
    outcome = await ReadFile().run({"path": "zero"}, ToolContext(workspace=Path("/dev")))
    assert outcome.error_class == "execution_error" and "device" in outcome.content


@pytest.mark.parametrize("tool_input", [
    (ReadFile(), {"path": "a\x00b"}),
    (ListDirectory(), {"path": "a\x00b"}),
    (WriteFile(), {"path": "a\x00b", "content": "x"}),
    (EditFile(), {"path": "a\x00b", "old_text": "x", "new_text": "y"}),
    (SearchFiles(), {"pattern": "x", "path": "a\x00b"}),
])
async def test_a_nul_byte_in_a_path_is_a_named_tool_error(
    ctx: ToolContext, tool_input: tuple[object, dict[str, str]]
) -> None:
    tool, arguments = tool_input
    outcome = await tool.run(arguments, ctx)  # type: ignore[attr-defined]
    assert outcome.error_class == "validation_error" and "NUL byte" in outcome.content


async def test_search_has_no_catastrophic_backtracking(ctx: ToolContext) -> None:
    (ctx.workspace / "evil.txt").write_text("a" * 40 + "!\n" + "a" * 100_000 + "!\n")
    started = time.monotonic()
    outcome = await SearchFiles().run({"pattern": "(a+)+$"}, ctx)
    assert time.monotonic() - started < 2.0
    assert outcome.content == "no matches"


async def test_search_names_syntax_re2_does_not_have(ctx: ToolContext) -> None:
    outcome = await SearchFiles().run({"pattern": r"(a)\1"}, ctx)
    assert outcome.error_class == "validation_error" and "RE2 syntax" in outcome.content


async def test_search_stops_at_its_time_budget(ctx: ToolContext) -> None:
    for n in range(30):
        (ctx.workspace / f"f{n}.txt").write_text("needle\n" * 3)
    outcome = await SearchFiles(budget_seconds=0.0).run({"pattern": "needle"}, ctx)
    assert "[stopped after 0s; narrow the path or glob" in outcome.content


async def test_cancelling_a_search_stops_its_worker(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(200):
        (ctx.workspace / f"f{n}.txt").write_text("x\n" * 5000)
    tool = SearchFiles(budget_seconds=600)
    task = asyncio.create_task(tool.run({"pattern": "nomatch"}, ctx))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # the worker sees the stop flag at its next line: the default executor drains quickly
    started = time.monotonic()
    await asyncio.get_running_loop().shutdown_default_executor()
    assert time.monotonic() - started < 2.0
