"""`metis chat`: the interactive session — streamed answers, slash commands, inline confirmations.

Each message runs as a cancellable turn (Ctrl-C stops the answer or the tool and the chat goes
on); Ctrl-C or Ctrl-D at the prompt ends the session (session.ended). A leading `@model` sends
one message to another model; `/model` changes the session's model. With nothing configured it
hands over to first_run (and from there possibly to the demo).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from metis_core.agent.confirmation import Confirmer
from metis_core.agent.runtime import Runtime
from metis_core.agent.session import Session
from metis_core.agent.turn import TurnResult
from metis_core.cli import first_run
from metis_core.cli.cassette_flags import replaying
from metis_core.cli.chat_input import MessageReader, enable_line_editing
from metis_core.cli.confirm_prompt import LineReader, NoTerminalDenier, TerminalConfirmer
from metis_core.cli.demo.tour import run_demo
from metis_core.cli.output import Terminal
from metis_core.cli.render import NoteHandler, StreamPrinter, shown_tools, turn_summary
from metis_core.cli.route_prompt import TerminalRouteAdvisor, describe
from metis_core.cli.runtime_setup import load_cli_config, open_runtime, require_a_key_for
from metis_core.cli.session_ids import resolve_session_id
from metis_core.cli.slash_commands import SlashCommands
from metis_core.cli.tool_choice import chosen_tools
from metis_core.cli.turn_execution import add_system_prompt, check_images_allowed, execute_turn, split_override
from metis_core.errors import MetisError
from metis_core.messages import ContentBlock

PROMPT = "you> "


class ChatLoop:
    def __init__(self, runtime: Runtime, session: Session, terminal: Terminal, runner: asyncio.Runner,
                 printer: StreamPrinter, *, interactive: bool, confirm_timeout: float) -> None:
        self.runtime = runtime
        self.session = session
        self.terminal = terminal
        self.runner = runner
        self.printer = printer
        self.interactive = interactive
        self.confirm_timeout = confirm_timeout
        self.pending_attachments: list[ContentBlock] = []
        self.last_result: TurnResult | None = None
        self.commands = SlashCommands(self)
        self.reader = MessageReader(interactive=interactive, echo=lambda text: self.terminal.out.print(
            text.rstrip(), style="dim", markup=False))
        session.confirmation.timeout_seconds = confirm_timeout

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        self.banner()
        while True:
            try:
                line = self.read_prompt()
            except (KeyboardInterrupt, EOFError):
                self.terminal.out.print()
                break
            except MetisError as error:  # e.g. `!edit` with no usable editor
                self.terminal.fail(str(error))
                continue
            if line is None:
                break
            if not line.strip():
                continue
            if line.lstrip().startswith("/") and "\n" not in line.strip():
                if not self.commands.handle(line.strip()):
                    break
                continue
            self.send(line)
        self.end()

    def read_prompt(self) -> str | None:
        return self.reader.read(PROMPT)

    def banner(self) -> None:
        out = self.terminal.out
        out.print(f"metis chat · session {self.session.id}", style="bold", markup=False)
        out.print(f"workspace {self.session.workspace} · model {self.model_label()} · /help for commands, "
                  "Ctrl-C stops an answer, Ctrl-D leaves", style="dim", markup=False)
        if not self.interactive and not self.runtime.approve_everything:
            out.print("no terminal: tool confirmations are denied (pass --yes to allow them)", style="dim")

    def model_label(self) -> str:
        if self.session.sticky_model:
            return self.session.sticky_model
        default = self.session.engine.policy.global_.default or self.runtime.config.default_model
        return f"{default} (default)" if default else "(none configured)"

    # --- one message ------------------------------------------------------------------------

    def send(self, text: str) -> None:
        if self.pending_attachments:
            try:  # refused with the setting that allows it; the attachment stays for another model
                check_images_allowed(self.runtime, self.session, split_override(text)[0])
            except MetisError as error:
                self.terminal.fail(str(error))
                return
        attachments, self.pending_attachments = self.pending_attachments, []
        started = time.perf_counter()
        try:
            result, override = execute_turn(self.runner, self.runtime, self.session, text,
                                            attachments=attachments or None, on_stream=self.printer)
        except MetisError as error:
            self.printer.finish()
            self.terminal.fail(str(error))
            return
        except KeyboardInterrupt:
            result, override = None, None
        self.printer.finish()
        if result is None or result.cancelled:
            self.terminal.warn("cancelled: the partial answer is kept and the chat goes on")
            return
        self.last_result = result
        if result.error:
            self.terminal.fail(result.error)
        if result.suggestion is not None:
            self.terminal.out.print(f"{describe(result.suggestion)} · /route ignore dismisses it", style="yellow",
                                    markup=False)
        if override is not None and result.model not in self.session.engine.expand(override):
            self.terminal.warn(f"@{override} could not take this message; {result.model} answered "
                               "(`metis trace show` has the routing reasons)")
        self.terminal.out.print(turn_summary(result, time.perf_counter() - started), style="dim", markup=False)

    # --- switching sessions -----------------------------------------------------------------

    def switch_to(self, session_id: str) -> None:
        resumed = self.runtime.sessions.resume(resolve_session_id(self.runtime.store, session_id))
        self.runtime.sessions.end(self.session, "completed")
        resumed.confirmation.timeout_seconds = self.confirm_timeout
        self.session = resumed

    def end(self) -> None:
        self.runtime.sessions.end(self.session, "completed")
        self.terminal.out.print(f"session {self.session.id} saved · resume with: metis chat --session "
                                f"{self.session.id}", style="dim", markup=False)


def chat(model: str | None, session_id: str | None, yes: bool, workspace: Path, confirm_timeout: float,
         show_thinking: bool = True, *, system: str | None = None, no_tools: bool = False,
         tools: list[str] | None = None, tool_modules: Sequence[Path] = ()) -> None:
    config = load_cli_config()
    terminal = Terminal.open(config)
    if model is None and session_id is None and not first_run.has_any_provider(config) and not replaying():
        choice = first_run.guide(terminal, config)
        if choice is None:
            run_demo(terminal)
            return
        model = choice.model
    if model is None and session_id is None and first_run.only_a_local_server(config) and not replaying():
        model = first_run.local_server_model(terminal, config, ask=terminal.interactive)
    interactive = terminal.interactive
    if interactive:
        enable_line_editing()
    printer = StreamPrinter(terminal.out, show_thinking=show_thinking)
    logging.getLogger("metis_core").addHandler(NoteHandler(printer))  # the chat process ends with the chat
    reader = LineReader(sys.stdin.fileno()) if interactive else None
    confirmer: Confirmer = TerminalConfirmer(terminal, reader) if reader is not None else NoTerminalDenier(terminal)
    runtime = open_runtime(config, confirmer=confirmer, approve_everything=yes, tool_modules=tool_modules)
    if reader is not None:
        runtime.route_advice = TerminalRouteAdvisor(terminal, reader)
    try:
        runtime.tools = shown_tools(chosen_tools(runtime.tools, no_tools=no_tools, names=tools), printer)
        if model is not None:
            require_a_key_for(runtime, model)
        if session_id is not None:
            session = runtime.sessions.resume(resolve_session_id(runtime.store, session_id))
            if model is not None:
                runtime.sessions.swap_model(session, model)
        else:
            session = runtime.sessions.create(workspace, model=model)
        if system is not None:
            add_system_prompt(runtime, session, system)
        with asyncio.Runner() as runner:
            ChatLoop(runtime, session, terminal, runner, printer, interactive=interactive,
                     confirm_timeout=confirm_timeout).run()
    finally:
        runtime.close()
