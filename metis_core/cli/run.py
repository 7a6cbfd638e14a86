"""`metis run "prompt"`: one turn, for scripts — streamed text, or one JSON document with --json.

Text piped on stdin is appended to the prompt (`git diff | metis run "review this"`). `--session
ID` / `-c` continue a stored session (history, tool ids and spend rebuilt from the store);
`-t NAME` applies a template, `-s` a system prompt, `-o` model options, `--tools`/`--no-tools`
choose the tools offered, `--no-log` keeps nothing. Without --yes, tool confirmations are asked
on a terminal and denied (as a policy, with a note) when there is none. The exit code says how
it went (exit_codes.py); with --json even a failure prints a document with `error` and `exit_code`.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metis_core.adapters.base import AdapterOptions
from metis_core.agent.confirmation import Confirmer
from metis_core.agent.runtime import Runtime
from metis_core.agent.session import Session
from metis_core.agent.turn import TurnResult
from metis_core.cli.cassette_flags import replaying
from metis_core.cli.confirm_prompt import LineReader, NoTerminalDenier, TerminalConfirmer
from metis_core.cli.exit_codes import ExitCode, UsageProblem, exit_code_for
from metis_core.cli.first_run import has_any_provider, local_server_model, only_a_local_server
from metis_core.cli.model_options import model_options, parse_pairs
from metis_core.cli.output import Terminal
from metis_core.cli.render import StreamPrinter, turn_summary
from metis_core.cli.runtime_setup import load_cli_config, open_runtime, require_a_key_for
from metis_core.cli.session_ids import LATEST, resolve_session_id
from metis_core.cli.template_files import load_template
from metis_core.cli.tool_choice import chosen_tools
from metis_core.cli.turn_execution import (
    add_system_prompt,
    check_images_allowed,
    execute_turn,
    image_attachment,
    split_override,
)
from metis_core.config import MetisConfig
from metis_core.errors import ConfigError, MetisError
from metis_core.messages import ContentBlock

NOTHING_CONFIGURED = (
    "no model provider is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or OPENROUTER_API_KEY, "
    "or pass --model ollama:<model> for a local Ollama (`metis chat` explains more; `metis demo` runs offline)"
)


@dataclass
class RunRequest:
    """Everything `metis run` was asked, before any of it is checked."""

    prompt: str | None
    model: str | None = None
    session: str | None = None
    continue_latest: bool = False
    system: str | None = None
    options: list[str] = field(default_factory=list)
    template: str | None = None
    no_tools: bool = False
    tools: list[str] | None = None
    no_log: bool = False
    yes: bool = False
    as_json: bool = False
    attach: list[Path] = field(default_factory=list)
    workspace: Path = Path(".")
    tool_modules: list[Path] = field(default_factory=list)
    """Python files whose @tool functions this run offers too (`--tools-from`)."""


def result_document(session_id: str | None, result: TurnResult | None, exit_code: ExitCode) -> dict[str, Any]:
    """The --json output: stable keys, cost as a decimal string (null when a call was unpriced, or no call
    was charged), `unpriced_calls` how many calls had no price."""
    final = result.final if result is not None else None
    usage = final.metadata.usage if final is not None else None
    priced = result is not None and result.unpriced_calls == 0
    return {
        "session_id": session_id,
        "turn_id": result.turn_id if result else None,
        "answer": result.answer if result else "",
        "model": result.model if result else None,
        "stop_reason": result.stop_reason if result else "cancelled",
        "usage": {
            "input_tokens": result.input_tokens if result else 0,
            "output_tokens": result.output_tokens if result else 0,
            "llm_calls": result.llm_calls if result else 0,
            "tool_calls": result.tool_calls if result else 0,
        },
        # every priced call of the turn, also when it ended without an answer (a failed structured run)
        "cost_usd": format(result.cost_usd, "f") if result is not None and priced
        and (usage is not None or result.cost_usd) else None,
        "unpriced_calls": result.unpriced_calls if result else 0,
        "cancelled": result is None or result.cancelled,
        "error": result.error if result else None,
        "exit_code": int(exit_code),
    }


def outcome_code(result: TurnResult | None) -> ExitCode:
    if result is None or result.cancelled:
        return ExitCode.CANCELLED
    if result.failure is not None:
        return exit_code_for(result.failure)
    return ExitCode.PROVIDER if result.error else ExitCode.OK


def piped_input() -> str | None:
    """What was piped on stdin, if stdin is not a terminal and something came; None otherwise."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    text = sys.stdin.read()
    return text if text.strip() else None


def full_prompt(prompt: str | None, piped: str | None) -> str:
    """The prompt, then the piped text after a blank line; refused when both are empty."""
    parts = [part.strip("\n") for part in (prompt, piped) if part and part.strip()]
    if not parts:
        raise UsageProblem('nothing to send: give a prompt (`metis run "hello"`) or pipe text into metis run')
    return "\n\n".join(parts)


def run(request: RunRequest) -> ExitCode:
    config = load_cli_config()
    terminal = Terminal.open(config)
    try:
        return _run(terminal, config, request)
    except MetisError as error:
        if request.as_json:
            terminal.raw(json.dumps({"session_id": request.session, "error": str(error),
                                     "exit_code": int(exit_code_for(error))}) + "\n")
        raise


def _settings(request: RunRequest, config: MetisConfig) -> tuple[str | None, str | None, dict[str, Any]]:
    """(model, system prompt, model options): command-line values over the template's."""
    template = load_template(request.template, config.home) if request.template else None
    model = request.model or (template.model if template else None)
    system = request.system if request.system is not None else (template.system if template else None)
    options = {**(template.options if template else {}), **parse_pairs(request.options)}
    return model, system, model_options(options)


def _list_tools(terminal: Terminal, config: MetisConfig, request: RunRequest) -> ExitCode:
    """`metis run --tools list`: the tools `--tools NAME` can offer (a table, or plain rows when piped)."""
    from metis_core.cli.rows import Rows, print_rows

    runtime = open_runtime(config, tool_modules=request.tool_modules)
    try:
        rows = Rows(("tool", "side effects", "asks first", "description"))
        for tool in runtime.tools.definitions():
            rows.rows.append((tool.name, tool.side_effects.value, "yes" if tool.needs_confirmation else "no",
                              tool.description))
    finally:
        runtime.close()
    print_rows(terminal, rows)
    return ExitCode.OK


def _run(terminal: Terminal, config: MetisConfig, request: RunRequest) -> ExitCode:
    if request.tools == ["list"]:
        return _list_tools(terminal, config, request)
    if request.no_log and (request.session or request.continue_latest):
        raise UsageProblem("--no-log starts a conversation that is not kept; it cannot continue a stored session")
    if request.session and request.continue_latest:
        raise UsageProblem("give --session ID or --continue, not both")
    session_arg = LATEST if request.continue_latest else request.session
    model, system, options = _settings(request, config)
    prompt = full_prompt(request.prompt, piped_input())
    if model is None and session_arg is None and not has_any_provider(config) and not replaying():
        raise ConfigError(NOTHING_CONFIGURED)
    if model is None and session_arg is None and only_a_local_server(config) and not replaying():
        model = local_server_model(terminal, config, ask=False)
    split_override(prompt)  # a malformed `@model` is refused before a session is opened
    interactive = terminal.interactive and not request.as_json
    confirmer: Confirmer = TerminalConfirmer(terminal, LineReader(sys.stdin.fileno())) if interactive \
        else NoTerminalDenier(terminal)
    scratch = Path(tempfile.mkdtemp(prefix="metis-no-log-")) if request.no_log else None
    runtime = open_runtime(config, confirmer=confirmer, approve_everything=request.yes,
                           tool_modules=request.tool_modules,
                           db_path=scratch / "metis.db" if scratch else None)
    session_id: str | None = None
    try:
        runtime.tools = chosen_tools(runtime.tools, no_tools=request.no_tools, names=request.tools)
        if model is not None:
            require_a_key_for(runtime, model)
        if session_arg is not None:
            session = runtime.sessions.resume(resolve_session_id(runtime.store, session_arg))
        else:
            session = runtime.sessions.create(request.workspace, model=model)
        session_id = None if request.no_log else session.id
        result, started, printer = _turn(terminal, runtime, session, request, prompt, model, system, options,
                                         resumed=session_arg is not None)
    finally:
        runtime.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return _report(terminal, request, session_id, result, started, printer)


def _turn(terminal: Terminal, runtime: Runtime, session: Session, request: RunRequest, prompt: str,
          model: str | None, system: str | None, options: dict[str, Any], *, resumed: bool,
          ) -> tuple[TurnResult | None, float, StreamPrinter | None]:
    disposition = "abandoned"
    try:
        if resumed and model is not None:
            runtime.sessions.swap_model(session, model)
        if system is not None:
            add_system_prompt(runtime, session, system)
        attachments: list[ContentBlock] = [image_attachment(p, session.workspace) for p in request.attach]
        if attachments:
            check_images_allowed(runtime, session, split_override(prompt)[0] or model)
        printer = None if request.as_json else StreamPrinter(terminal.out, show_thinking=terminal.out.is_terminal)
        started = time.perf_counter()
        disposition = "error"
        with asyncio.Runner() as runner:
            result, _ = execute_turn(runner, runtime, session, prompt, attachments=attachments or None,
                                     on_stream=printer,
                                     options=AdapterOptions(model="", **options) if options else None)
        disposition = "abandoned" if result is None or result.cancelled else ("error" if result.error else "completed")
    finally:
        runtime.sessions.end(session, disposition)
    return result, started, printer


def _report(terminal: Terminal, request: RunRequest, session_id: str | None, result: TurnResult | None,
            started: float, printer: StreamPrinter | None) -> ExitCode:
    code = outcome_code(result)
    if request.as_json:
        terminal.raw(json.dumps(result_document(session_id, result, code), ensure_ascii=False) + "\n")
        if result is not None and result.error:
            terminal.fail(result.error)  # stdout stays one JSON document; stderr says it for people
        return code
    if printer is not None:
        printer.finish()
    if result is not None and result.error:
        terminal.fail(result.error)
    elif code is ExitCode.CANCELLED:
        terminal.fail("cancelled")
    if result is not None:
        where = f" · session {session_id}" if session_id else " · not kept (--no-log)"
        terminal.err.print(turn_summary(result, time.perf_counter() - started) + where, style="dim", markup=False)
    return code
