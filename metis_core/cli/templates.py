"""`metis templates list|show|edit`: the templates `metis run -t NAME` applies.

`edit NAME` opens the template in $VISUAL or $EDITOR (a skeleton for a new one), checks what was
saved and stores it as the new version, keeping the previous one (template_files.py); an invalid
edit is refused and the file stays as it was. `show NAME --version N` prints an older version.
"""

from __future__ import annotations

from typing import Annotated

import typer

from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.rows import Rows, preview, print_rows
from metis_core.cli.template_files import (
    SKELETON,
    list_templates,
    load_template,
    save_template,
    template_path,
    version_numbers,
    versions_dir,
)
from metis_core.cli.text_editor import edit_text

app = typer.Typer(help="Saved system prompts, models and options for `metis run -t NAME`.", no_args_is_help=True,
                  add_completion=False)
NameArgument = Annotated[str, typer.Argument(help="Template name (letters, digits, '.', '_', '-').")]


@app.command("list")
@guarded
def list_(plain: PlainOption = False) -> None:
    """The saved templates: name, model, options, versions kept and the start of the system prompt."""
    terminal = Terminal.open()
    rows = Rows(("template", "model", "options", "versions", "system"))
    for name in list_templates():
        template = load_template(name)
        options = " ".join(f"{k}={v}" for k, v in template.options.items())
        rows.rows.append((name, template.model or "", options, str(len(version_numbers(name)) + 1),
                          preview(template.system or "", 60)))
    print_rows(terminal, rows, plain=plain)


@app.command("show")
@guarded
def show(
    name: NameArgument,
    version: Annotated[int | None, typer.Option("--version", min=1, help="An earlier version (1 is the first).")]
    = None,
) -> None:
    """Print a template's file (the current version, or --version N)."""
    terminal = Terminal.open()
    path = template_path(name)
    if version is not None:
        path = versions_dir(name) / f"{version}.yaml"
        if not path.is_file():
            kept = ", ".join(str(n) for n in version_numbers(name)) or "none"
            raise UsageProblem(f"template {name!r} has no version {version} (kept: {kept}; the current one is "
                               "shown without --version)")
    elif not path.is_file():
        load_template(name)  # raises the error that lists the templates
    terminal.raw(path.read_text(encoding="utf-8"))


@app.command("edit")
@guarded
def edit(name: NameArgument) -> None:
    """Edit (or create) a template in $VISUAL / $EDITOR; the previous version is kept."""
    terminal = Terminal.open()
    path = template_path(name)
    text = path.read_text(encoding="utf-8") if path.is_file() else SKELETON.format(name=name)
    edited = edit_text(text, suffix=".yaml")
    kept = save_template(name, edited)
    if kept is None and path.is_file() and edited == text:
        terminal.out.print(f"template {name} unchanged", markup=False)
    elif kept is None:
        terminal.out.print(f"created template {name} ({path})", markup=False)
    else:
        terminal.out.print(f"saved template {name}; the previous version is kept as version {kept}", markup=False)
