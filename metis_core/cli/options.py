"""Options several commands share (model, session, workspace, confirmations, tools, output).

Only typer and pathlib are imported here: command modules use these annotations at import time,
and importing a command must not pull in the agent before it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ModelOption = Annotated[str | None, typer.Option(
    "--model", "-m", help="Model id, alias, bare name or chain, e.g. sonnet or gpt-4o-mini.")]
SessionOption = Annotated[str | None, typer.Option(
    "--session", help="Continue this stored session: an id, a unique prefix of one, or `latest`.")]
ContinueOption = Annotated[bool, typer.Option("--continue", "-c", help="Continue the most recent session.")]
SystemOption = Annotated[str | None, typer.Option("--system", "-s", help="System prompt for this conversation.")]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Approve every tool confirmation.")]
WorkspaceOption = Annotated[Path, typer.Option("--workspace", "-w", help="Directory the tools work in.",
                                               file_okay=False, exists=True)]
NoToolsOption = Annotated[bool, typer.Option("--no-tools", help="Offer the model no tools at all.")]
ToolsOption = Annotated[list[str] | None, typer.Option(
    "--tools", help="Offer only this tool (repeatable, or comma-separated); `metis run --tools list` names them.")]
ModelOptionsOption = Annotated[list[str] | None, typer.Option(
    "--option", "-o", help="Model option KEY=VALUE (repeatable): temperature, max_tokens, top_p, stop, "
                           "reasoning_effort, thinking_budget_tokens.")]
TemplateOption = Annotated[str | None, typer.Option(
    "--template", "-t", help="Use a saved template (system prompt, model, options): `metis templates list`.")]
PlainOption = Annotated[bool, typer.Option(
    "--plain", help="Tab-separated rows with whole ids (the default when stdout is not a terminal).")]
ToolsFromOption = Annotated[list[Path] | None, typer.Option(
    "--tools-from", metavar="FILE", dir_okay=False,
    help="Offer the @tool functions of this Python file too (repeatable).")]
