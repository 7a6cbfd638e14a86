"""Memory kept: every change of MEMORY.md / USER.md leaves a version (taken where it is written),
the version before the first change included; `metis memory history | show | restore` bring any
version back, and what a restore replaces stays restorable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli.cli_harness import cli_env
from typer.testing import CliRunner

from metis_core.agent.memory import snapshots
from metis_core.agent.memory.snapshots import versions
from metis_core.cli.app import app

from ..conftest import Harness
from .test_memory import call

ORIGINAL = "# MEMORY.md — what the agent learned about this work\n\n- tests run with make test\n"


async def test_each_change_leaves_a_version_and_the_first_one_is_the_file_before(harness: Harness) -> None:
    h = harness
    memory = h.workspace / ".metis" / "MEMORY.md"
    memory.parent.mkdir()
    memory.write_text(ORIGINAL)
    session = h.runtime.sessions.create(h.workspace)
    await call(h, session, {"action": "add", "file": "MEMORY.md", "text": "the API lives in api/"})
    await call(h, session, {"action": "consolidate", "file": "MEMORY.md", "entries": ["only this is left"]})

    kept = versions(memory)
    assert [s.entries for s in kept] == [1, 2, 1]  # before, after the add, after the consolidation
    assert kept[0].path.read_text() == ORIGINAL and kept[-1].path.read_text() == memory.read_text()
    assert not versions(h.runtime.home / "USER.md")  # no file, nothing to keep

    before, after = snapshots.restore(memory, 1)
    assert after == ORIGINAL == memory.read_text() and "only this is left" in before
    assert [s.entries for s in versions(memory)] == [1, 2, 1, 1]  # the restore is a version too
    assert snapshots.snapshot(memory) is None  # same content as the newest: not copied twice


def test_only_the_newest_versions_are_kept(tmp_path: Path) -> None:
    memory = tmp_path / "MEMORY.md"
    for number in range(5):
        memory.write_text(f"- fact {number}\n")
        snapshots.snapshot(memory, keep=3)
    assert [s.path.read_text() for s in versions(memory)] == ["- fact 2\n", "- fact 3\n", "- fact 4\n"]
    assert [s.version for s in versions(memory)] == [1, 2, 3]


def test_the_cli_lists_shows_and_restores_a_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, workspace = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    memory = workspace / ".metis" / "MEMORY.md"
    memory.parent.mkdir(parents=True)
    for text in (ORIGINAL, ORIGINAL + "- a wrong fact\n"):
        memory.write_text(text)
        snapshots.snapshot(memory)
    monkeypatch.chdir(workspace)
    runner, env = CliRunner(), cli_env(home, None)

    listed = json.loads(runner.invoke(app, ["memory", "history", "--json"], env=env).stdout)
    assert [(v["version"], v["entries"]) for v in listed] == [(1, 1), (2, 2)]
    assert runner.invoke(app, ["memory", "show", "1"], env=env).stdout == ORIGINAL
    assert runner.invoke(app, ["memory", "restore", "1"], env=env).exit_code == 2  # no terminal: --yes needed
    done = runner.invoke(app, ["memory", "restore", "1", "--yes"], env=env)
    assert done.exit_code == 0 and "restored to version 1" in done.stdout
    assert memory.read_text() == ORIGINAL
    missing = runner.invoke(app, ["memory", "show", "9"], env=env)
    assert missing.exit_code == 2 and "versions 1 to 3" in missing.stderr
    empty = runner.invoke(app, ["memory", "history", "--user"], env=env)
    assert empty.exit_code == 0 and "no saved versions yet" in empty.stdout
