"""`metis skills list|show|new|edit|import`: the skill folders of METIS_HOME and the workspace.

new and import scan the skill and record skill.created (source manual / imported, with the scan
result); edit records skill.modified (before/after hashes, diff size) when the file changed.
These events go to the trace under the system session. A blocked skill is kept on disk (so it can
be fixed) but never loads.
"""

from __future__ import annotations

import difflib
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from metis_core.agent.skills.catalog import (
    SKILL_FILE,
    WORKSPACE_SKILLS,
    Skill,
    SkillCatalog,
    SkillSource,
    parse_skill,
    text_tokens,
)
from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.rows import Rows, print_rows
from metis_core.config import metis_home
from metis_core.errors import SkillFormatError
from metis_core.hashing import sha256_hex

if TYPE_CHECKING:  # the bus and the event catalog load only for the commands that record (new, edit, import)
    from metis_core.events.bus import EventBus

app = typer.Typer(help="Skills: SKILL.md folders in METIS_HOME/skills and <workspace>/.metis/skills.",
                  no_args_is_help=True)

WorkspaceOption = Annotated[Path, typer.Option("--workspace", "-w", help="Workspace whose skills to include.",
                                               file_okay=False)]
TEMPLATE = """---
name: {name}
description: {description}
version: "1"
always: {always}
---

# {name}

Write the instructions here: when this skill applies, the steps, and what to avoid.
"""


@contextmanager
def _recorder() -> Iterator[EventBus]:
    """A bus whose events land in the trace (system session), drained on exit."""
    from metis_core.cli.local_data import trace_store
    from metis_core.events.bus import EventBus

    bus = EventBus()
    with trace_store() as trace:
        trace.attach(bus)
        try:
            yield bus
        finally:
            bus.shutdown(drain=True)


def _catalog(workspace: Path) -> SkillCatalog:
    return SkillCatalog.discover(metis_home(), workspace.resolve())


def _find(workspace: Path, name: str) -> Skill:
    skill = _catalog(workspace).skills.get(name)
    if skill is None:
        raise UsageProblem(f"no skill named {name!r}; `metis skills list` shows them")
    return skill


def _target_dir(workspace: Path, in_workspace: bool) -> tuple[Path, SkillSource]:
    if in_workspace:
        return workspace.resolve() / WORKSPACE_SKILLS, "workspace"
    return metis_home() / "skills", "global"


def _created(bus: EventBus, skill: Skill, source: str) -> None:
    from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor

    bus.emit_new("skill.created", {
        "skill_id": skill.name, "source": source, "source_session_id": None,
        "size_tokens": text_tokens(skill.body), "security_scan_result": skill.scan.verdict,
        "security_scan_findings": skill.scan.findings,
    }, session_id=SYSTEM_SESSION_ID, actor=Actor.USER)


def _report_scan(terminal: Terminal, skill: Skill) -> None:
    if skill.scan.verdict == "blocked":
        terminal.warn(f"{skill.name} is BLOCKED by the security scan and will never load: "
                      f"{'; '.join(skill.scan.findings)}")
    elif skill.scan.verdict == "warning":
        terminal.warn(f"{skill.name}: security scan warnings: {'; '.join(skill.scan.findings)}")


@app.command("list")
@guarded
def list_skills(workspace: WorkspaceOption = Path("."), plain: PlainOption = False) -> None:
    """Every skill: name, version, where it lives, always or on demand, scan verdict."""
    terminal = Terminal.open()
    catalog = _catalog(workspace)
    rows = Rows(("skill", "version", "source", "loads", "tokens", "scan", "description"))
    for skill in sorted(catalog.skills.values(), key=lambda s: s.name):
        loads = "never (blocked)" if skill.blocked else ("always" if skill.always else "on demand")
        rows.rows.append((skill.name, skill.version, skill.source, loads, str(skill.tokens), skill.scan.verdict,
                          skill.description))
    print_rows(terminal, rows, plain=plain)
    for problem in catalog.problems:
        terminal.warn(f"not a valid skill: {problem}")


@app.command("show")
@guarded
def show(name: str, workspace: WorkspaceOption = Path(".")) -> None:
    """A skill's SKILL.md and its scan findings."""
    terminal = Terminal.open()
    skill = _find(workspace, name)
    terminal.out.print(f"{skill.path} · {skill.source} · v{skill.version} · scan {skill.scan.verdict}",
                       markup=False, style="bold")
    for finding in skill.scan.findings:
        terminal.out.print(f"  ! {finding}", markup=False, style="yellow")
    terminal.raw(skill.path.read_text(encoding="utf-8"))


@app.command("new")
@guarded
def new(
    name: str,
    description: Annotated[str, typer.Option(help="One line: when to use the skill.")] = "Describe when to use it.",
    always: Annotated[bool, typer.Option("--always", help="Inline it in every session.")] = False,
    in_workspace: Annotated[bool, typer.Option("--workspace-skill", help="Create it in the workspace, not "
                                                                          "METIS_HOME.")] = False,
    workspace: WorkspaceOption = Path("."),
) -> None:
    """Create a skill folder with a SKILL.md to fill in (then `metis skills edit NAME`)."""
    terminal = Terminal.open()
    root, source = _target_dir(workspace, in_workspace)
    folder = root / name
    if (folder / SKILL_FILE).exists():
        raise UsageProblem(f"skill {name!r} already exists at {folder}; edit it with `metis skills edit {name}`")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SKILL_FILE).write_text(TEMPLATE.format(name=name, description=description,
                                                     always="true" if always else "false"), encoding="utf-8")
    try:
        skill = parse_skill(folder / SKILL_FILE, source)
    except SkillFormatError:
        shutil.rmtree(folder)
        raise UsageProblem(f"{name!r} is not a valid skill name: lower-case letters, digits, '-' or '_'") from None
    with _recorder() as bus:
        _created(bus, skill, "manual")
    terminal.out.print(f"created {folder / SKILL_FILE}", markup=False)
    _report_scan(terminal, skill)


@app.command("edit")
@guarded
def edit(
    name: str,
    reason: Annotated[str, typer.Option(help="Why it changed (recorded).")] = "edited by hand",
    workspace: WorkspaceOption = Path("."),
) -> None:
    """Open SKILL.md in $VISUAL / $EDITOR; records skill.modified if it changed."""
    terminal = Terminal.open()
    skill = _find(workspace, name)
    before = skill.path.read_text(encoding="utf-8")
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    subprocess.run([*shlex.split(editor), str(skill.path)], check=False)
    after = skill.path.read_text(encoding="utf-8")
    if after == before:
        terminal.out.print("no change", markup=False)
        return
    diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True)))
    try:
        changed = parse_skill(skill.path, skill.source)
    except SkillFormatError as error:
        terminal.warn(f"{error}; the skill will not load until this is fixed")
        changed = None
    bumped = changed is not None and changed.version != skill.version
    from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor

    with _recorder() as bus:
        bus.emit_new("skill.modified", {
            "skill_id": skill.name, "modification_type": "version_bump" if bumped else "edit",
            "before_hash": sha256_hex(before), "after_hash": sha256_hex(after),
            "diff_size_bytes": len(diff.encode()), "reason": reason,
        }, session_id=SYSTEM_SESSION_ID, actor=Actor.USER)
    terminal.out.print(f"saved {skill.path}", markup=False)
    if changed is not None:
        _report_scan(terminal, changed)


@app.command("import")
@guarded
def import_skill(
    source_path: Annotated[Path, typer.Argument(help="A skill folder (with SKILL.md) or a SKILL.md file.",
                                                exists=True)],
    in_workspace: Annotated[bool, typer.Option("--workspace-skill", help="Import into the workspace.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace a skill of the same name.")] = False,
    workspace: WorkspaceOption = Path("."),
) -> None:
    """Copy a skill in, scan it and record skill.created (source imported)."""
    terminal = Terminal.open()
    folder = source_path if source_path.is_dir() else source_path.parent
    skill_file = folder / SKILL_FILE if source_path.is_dir() else source_path
    root, source = _target_dir(workspace, in_workspace)
    incoming = parse_skill(skill_file, source)
    target = root / incoming.name
    if target.exists() and not force:
        raise UsageProblem(f"a skill named {incoming.name!r} already exists at {target}; use --force to replace it")
    if target.exists():
        shutil.rmtree(target)
    if source_path.is_dir():
        shutil.copytree(folder, target, symlinks=False)
    else:
        target.mkdir(parents=True)
        shutil.copy2(skill_file, target / SKILL_FILE)
    skill = parse_skill(target / SKILL_FILE, source)
    with _recorder() as bus:
        _created(bus, skill, "imported")
    terminal.out.print(f"imported {skill.name} into {target} (scan: {skill.scan.verdict})", markup=False)
    _report_scan(terminal, skill)
