"""The `metis chat` command line: its options; the chat itself is chat.py (imported when it runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from metis_core.cli import cassette_flags
from metis_core.cli.options import (
    ContinueOption,
    ModelOption,
    NoToolsOption,
    SessionOption,
    SystemOption,
    ToolsFromOption,
    ToolsOption,
    WorkspaceOption,
    YesOption,
)


def chat(
    model: ModelOption = None,
    session: SessionOption = None,
    continue_latest: ContinueOption = False,
    system: SystemOption = None,
    yes: YesOption = False,
    workspace: WorkspaceOption = Path("."),
    confirm_timeout: Annotated[float, typer.Option(min=1, help="Seconds before an unanswered confirmation "
                                                               "is denied.")] = 300.0,
    thinking: Annotated[bool, typer.Option(help="Show the model's thinking, dimmed.")] = True,
    no_tools: NoToolsOption = False,
    tools: ToolsOption = None,
    tools_from: ToolsFromOption = None,
    record: cassette_flags.RecordOption = None,
    replay: cassette_flags.ReplayOption = None,
) -> None:
    """Chat interactively: streamed answers, /commands, @model per message, Ctrl-C to stop an answer."""
    from metis_core.cli import chat as chat_module
    from metis_core.cli.exit_codes import UsageProblem
    from metis_core.cli.failures import guarded

    def start() -> None:
        if session and continue_latest:
            raise UsageProblem("give --session ID or --continue, not both")
        cassette_flags.use_cassette(record, replay)
        chat_module.chat(model, "latest" if continue_latest else session, yes, workspace, confirm_timeout,
                         show_thinking=thinking, system=system, no_tools=no_tools, tools=tools,
                         tool_modules=tools_from or [])

    guarded(start)()
