"""`metis memory history | show | restore`: the saved versions of MEMORY.md and USER.md
(agent/memory/snapshots.py). A restore writes the chosen version back, keeps what it replaced as a
version of its own, and records memory.updated (operation consolidate, actor user).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.rows import Rows, print_rows

if TYPE_CHECKING:
    from metis_core.agent.memory.snapshots import Snapshot

app = typer.Typer(help="Saved versions of MEMORY.md and USER.md: history, show, restore.", no_args_is_help=True)

UserOption = Annotated[bool, typer.Option("--user", help="USER.md (about you) instead of MEMORY.md (about the work).")]
VersionArgument = Annotated[int, typer.Argument(help="A version number from `metis memory history`.")]


def _path(user: bool) -> Path:
    from metis_core.agent.memory.files import memory_path
    from metis_core.store.sqlite.connection import metis_home  # not the config model: only its home is needed

    return memory_path("USER.md" if user else "MEMORY.md", Path.cwd(), metis_home())


def _version(path: Path, version: int) -> Snapshot:
    from metis_core.agent.memory.snapshots import version_of
    from metis_core.errors import MemoryEditError

    try:
        return version_of(path, version)
    except MemoryEditError as error:
        raise UsageProblem(str(error)) from None


@app.command("history")
@guarded
def history(
    user: UserOption = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the versions as a JSON array.")] = False,
    plain: PlainOption = False,
) -> None:
    """The kept versions of this workspace's memory file, oldest first."""
    from metis_core.agent.memory.snapshots import versions

    path = _path(user)
    kept = versions(path)
    terminal = Terminal.open()
    if as_json:
        terminal.raw(json.dumps([{"version": s.version, "taken_at": s.taken_at.isoformat(), "sha256": s.sha256,
                                  "size_bytes": s.size_bytes, "entries": s.entries} for s in kept]) + "\n")
        return
    if not kept:
        terminal.out.print(f"{path.name} ({path}) has no saved versions yet: they start with its first change",
                           markup=False)
        return
    rows = Rows(("version", "taken", "entries", "bytes", "sha256"))
    for s in kept:
        rows.rows.append((str(s.version), s.taken_at.strftime("%Y-%m-%d %H:%M:%S"), str(s.entries), str(s.size_bytes),
                          s.sha256))
    print_rows(terminal, rows, plain=plain)


@app.command("show")
@guarded
def show(version: VersionArgument, user: UserOption = False) -> None:
    """Print one saved version."""
    Terminal.open().raw(_version(_path(user), version).path.read_text(encoding="utf-8"))


@app.command("restore")
@guarded
def restore(
    version: VersionArgument,
    user: UserOption = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Restore without asking.")] = False,
) -> None:
    """Make a saved version the memory file again (what it replaces stays in the history)."""
    from metis_core.agent.memory import snapshots
    from metis_core.cli.local_data import trace_store
    from metis_core.cli.runtime_setup import load_cli_config
    from metis_core.events.catalog import make_event
    from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor
    from metis_core.hashing import sha256_hex

    path = _path(user)
    chosen = _version(path, version)
    terminal = Terminal.open()
    if not terminal.confirmed(f"replace {path} with version {version} ({chosen.entries} entries)?", yes=yes,
                              act=f"restoring {path.name}"):
        return
    before, after = snapshots.restore(path, version, load_cli_config().memory.history_keep)
    with trace_store() as trace:
        trace.append(make_event("memory.updated", {
            "file": path.name, "operation": "consolidate", "before_hash": sha256_hex(before),
            "after_hash": sha256_hex(after), "before_size_bytes": len(before.encode()),
            "after_size_bytes": len(after.encode()),
        }, session_id=SYSTEM_SESSION_ID, actor=Actor.USER))
    terminal.out.print(f"{path.name} restored to version {version} ({chosen.entries} entries); "
                       "it takes effect in the next session", markup=False)
