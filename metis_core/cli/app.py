"""The typer application behind the `metis` console script, and `main()`.

This file only declares commands and their options and hands each to the module that does the
work (chat.py, run.py, sessions.py, trace.py, admin.py, models.py, cost.py, demo/). Exit codes
are listed in exit_codes.py and docs/cli.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from metis_core.cli import admin, cassette_flags, cost, models, replay, sessions, trace
from metis_core.cli import chat as chat_module
from metis_core.cli import run as run_module
from metis_core.cli.demo.tour import run_demo
from metis_core.cli.exit_codes import ExitCode, UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.output import Terminal

app = typer.Typer(
    name="metis",
    help="One conversation across LLM providers, with every action on the record.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ModelOption = Annotated[str | None, typer.Option("--model", "-m", help="Model id, alias or chain, e.g. sonnet.")]
SessionOption = Annotated[str | None, typer.Option("--session", "-s", help="Continue this stored session.")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Approve every tool confirmation.")]
WorkspaceOption = Annotated[Path, typer.Option("--workspace", "-w", help="Directory the tools work in.",
                                               file_okay=False, exists=True)]
ToolsFromOption = Annotated[list[Path] | None, typer.Option(
    "--tools-from", metavar="FILE", dir_okay=False,
    help="Offer the @tool functions of this Python file too (repeatable).")]


@app.command("chat")
@guarded
def chat(
    model: ModelOption = None,
    session: SessionOption = None,
    yes: YesOption = False,
    workspace: WorkspaceOption = Path("."),
    confirm_timeout: Annotated[float, typer.Option(min=1, help="Seconds before an unanswered confirmation "
                                                               "is denied.")] = 300.0,
    thinking: Annotated[bool, typer.Option(help="Show the model's thinking, dimmed.")] = True,
    record: cassette_flags.RecordOption = None,
    replay: cassette_flags.ReplayOption = None,
    tools_from: ToolsFromOption = None,
) -> None:
    """Chat interactively: streamed answers, /commands, @model per message, Ctrl-C to stop an answer."""
    cassette_flags.use_cassette(record, replay)
    chat_module.chat(model, session, yes, workspace, confirm_timeout, show_thinking=thinking,
                     tool_modules=tools_from or [])


@app.command("run")
@guarded
def run(
    prompt: Annotated[str, typer.Argument(help="The message; a leading @model sends it to that model.")],
    model: ModelOption = None,
    session: SessionOption = None,
    yes: YesOption = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON document: session id, answer, model, "
                                                         "usage, cost.")] = False,
    attach: Annotated[list[Path] | None, typer.Option("--attach", help="Attach an image (repeatable).")] = None,
    workspace: WorkspaceOption = Path("."),
    record: cassette_flags.RecordOption = None,
    replay: cassette_flags.ReplayOption = None,
    tools_from: ToolsFromOption = None,
    schema: Annotated[Path | None, typer.Option("--schema", metavar="FILE", help="Answer as JSON validated "
                                                "against this JSON Schema (docs/structured-output.md).")] = None,
    retries: Annotated[int, typer.Option("--retries", min=0, max=8, help="With --schema: corrective retries after "
                                         "an invalid answer.")] = 2,
    nl_to_format: Annotated[bool, typer.Option("--nl-to-format", help="With --schema: after the retries, one "
                                               "free-form answer coerced into the schema.")] = False,
) -> None:
    """Send one message and print the answer (for scripts; see --json and the exit codes)."""
    cassette_flags.use_cassette(record, replay)
    if schema is not None:
        from metis_core.cli.run_structured import run_with_schema
        from metis_core.structured.policy import OutputPolicy

        if session is not None or attach or tools_from:
            raise UsageProblem("--schema runs a new session without tools or attachments; "
                               "drop --session, --attach and --tools-from")
        code = run_with_schema(prompt, schema, model, as_json, workspace,
                               OutputPolicy(max_retries=retries, nl_to_format=nl_to_format))
        if code is not ExitCode.OK:
            raise typer.Exit(int(code))
        return
    code = run_module.run(prompt, model, session, yes, as_json, attach or [], workspace,
                          tool_modules=tools_from or [])
    if code is not ExitCode.OK:
        raise typer.Exit(int(code))


@app.command("demo")
@guarded
def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Store the demo session in your METIS_HOME instead of a "
                                                      "temporary one.")] = False,
) -> None:
    """A tour of the real stack, offline, against a scripted model on a local server."""
    run_demo(Terminal.open(), keep=keep)


# After chat, run and demo, so `metis --help` lists the everyday commands first.
app.command("models")(models.models)
app.command("cost")(cost.cost)
app.add_typer(sessions.app, name="sessions")
app.add_typer(trace.app, name="trace")
app.command("backup")(admin.backup)
app.command("restore")(admin.restore)
app.add_typer(admin.audit_app, name="audit")
app.command("replay")(replay.replay)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(int(ExitCode.CANCELLED))
