"""The `metis run` command line: its arguments and options; the work is in run.py.

Kept apart so that declaring the command imports only typer (run.py loads the agent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from metis_core.cli import cassette_flags
from metis_core.cli.options import (
    ContinueOption,
    ModelOption,
    ModelOptionsOption,
    NoToolsOption,
    SessionOption,
    SystemOption,
    TemplateOption,
    ToolsFromOption,
    ToolsOption,
    WorkspaceOption,
    YesOption,
)


def run(
    prompt: Annotated[str | None, typer.Argument(
        help="The message; a leading @model sends it to that model. Piped stdin is appended to it.")] = None,
    model: ModelOption = None,
    session: SessionOption = None,
    continue_latest: ContinueOption = False,
    system: SystemOption = None,
    option: ModelOptionsOption = None,
    template: TemplateOption = None,
    no_tools: NoToolsOption = False,
    tools: ToolsOption = None,
    tools_from: ToolsFromOption = None,
    no_log: Annotated[bool, typer.Option("--no-log", help="Keep nothing: no session, no trace.")] = False,
    yes: YesOption = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document: session id, answer, model, "
                                                         "usage, cost.")] = False,
    attach: Annotated[list[Path] | None, typer.Option("--attach", help="Attach an image (repeatable).")] = None,
    workspace: WorkspaceOption = Path("."),
    record: cassette_flags.RecordOption = None,
    replay: cassette_flags.ReplayOption = None,
    schema: Annotated[Path | None, typer.Option("--schema", metavar="FILE", help="Answer as JSON validated "
                                                "against this JSON Schema (docs/structured-output.md).")] = None,
    retries: Annotated[int, typer.Option("--retries", min=0, max=8, help="With --schema: corrective retries after "
                                         "an invalid answer.")] = 2,
    nl_to_format: Annotated[bool, typer.Option("--nl-to-format", help="With --schema: after the retries, one "
                                               "free-form answer coerced into the schema.")] = False,
) -> None:
    """Send one message and print the answer (for scripts; see --json and the exit codes)."""
    from metis_core.cli.exit_codes import ExitCode
    from metis_core.cli.failures import guarded

    if schema is not None:
        from metis_core.cli.run_structured import SchemaRun, run_with_schema

        guarded(cassette_flags.use_cassette)(record, replay)
        unsupported = {"--session": session, "--continue": continue_latest, "--attach": attach,
                       "--tools-from": tools_from, "--tools": tools, "--template": template, "--no-log": no_log}
        code = guarded(run_with_schema)(SchemaRun(prompt, schema, model, as_json, workspace, retries, nl_to_format,
                                                  system, [name for name, given in unsupported.items() if given]))
        if code is not ExitCode.OK:
            raise typer.Exit(int(code))
        return
    from metis_core.cli.run import RunRequest
    from metis_core.cli.run import run as run_turn

    request = RunRequest(prompt=prompt, model=model, session=session, continue_latest=continue_latest, system=system,
                         options=option or [], template=template, no_tools=no_tools, tools=tools, no_log=no_log,
                         yes=yes, as_json=as_json, attach=attach or [], workspace=workspace,
                         tool_modules=tools_from or [])
    guarded(cassette_flags.use_cassette)(record, replay)
    code = guarded(run_turn)(request)
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))
