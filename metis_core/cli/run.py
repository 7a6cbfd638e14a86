"""`metis run "prompt"`: one turn, for scripts — streamed text, or one JSON document with --json.

`--session ID` continues a stored session (in a new process: history, tool ids and spend are
rebuilt from the store). Without --yes, tool confirmations are asked on a terminal and denied
when there is none. The exit code says how it went (exit_codes.py); with --json even a failure
prints a JSON document with `error` and `exit_code`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metis_core.agent.confirmation import Confirmer, deny_all
from metis_core.agent.turn import TurnResult
from metis_core.cli.cassette_flags import replaying
from metis_core.cli.confirm_prompt import LineReader, TerminalConfirmer
from metis_core.cli.exit_codes import ExitCode, exit_code_for
from metis_core.cli.first_run import has_any_provider
from metis_core.cli.output import Terminal
from metis_core.cli.render import StreamPrinter, turn_summary
from metis_core.cli.runtime_setup import load_cli_config, open_runtime, require_a_key_for
from metis_core.cli.turn_execution import execute_turn, image_attachment, split_override
from metis_core.config import MetisConfig
from metis_core.errors import ConfigError, MetisError
from metis_core.messages import ContentBlock

NOTHING_CONFIGURED = (
    "no model provider is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or OPENROUTER_API_KEY, "
    "or pass --model ollama:<model> for a local Ollama (`metis chat` explains more; `metis demo` runs offline)"
)


def result_document(session_id: str, result: TurnResult | None, exit_code: ExitCode) -> dict[str, Any]:
    """The --json output: stable keys, cost as a decimal string (null when unpriced or no call)."""
    final = result.final if result is not None else None
    usage = final.metadata.usage if final is not None else None
    priced = result is not None and not any(
        m.metadata.usage is not None and m.metadata.usage.cost_usd is None for m in result.produced)
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
        "cost_usd": format(result.cost_usd, "f") if result is not None and priced and usage is not None else None,
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


def run(prompt: str, model: str | None, session_id: str | None, yes: bool, as_json: bool,
        attach: list[Path], workspace: Path, tool_modules: Sequence[Path] = ()) -> ExitCode:
    config = load_cli_config()
    terminal = Terminal.open(config)
    try:
        return _run(terminal, config, prompt, model, session_id, yes, as_json, attach, workspace, tool_modules)
    except MetisError as error:
        if as_json:
            terminal.raw(json.dumps({"session_id": session_id, "error": str(error),
                                     "exit_code": int(exit_code_for(error))}) + "\n")
        raise


def _run(terminal: Terminal, config: MetisConfig, prompt: str, model: str | None, session_id: str | None, yes: bool,
         as_json: bool, attach: list[Path], workspace: Path, tool_modules: Sequence[Path] = ()) -> ExitCode:
    if model is None and session_id is None and not has_any_provider(config) and not replaying():
        raise ConfigError(NOTHING_CONFIGURED)
    split_override(prompt)  # a malformed `@model` is refused before a session is opened
    interactive = terminal.interactive and not as_json
    confirmer: Confirmer = TerminalConfirmer(terminal, LineReader(sys.stdin.fileno())) if interactive else deny_all
    runtime = open_runtime(config, confirmer=confirmer, approve_everything=yes, tool_modules=tool_modules)
    try:
        if model is not None:
            require_a_key_for(runtime, model)
        session = runtime.sessions.resume(session_id) if session_id else runtime.sessions.create(workspace, model=model)
        disposition = "abandoned"
        try:
            if session_id is not None and model is not None:
                runtime.sessions.swap_model(session, model)
            attachments: list[ContentBlock] = [image_attachment(p, session.workspace) for p in attach]
            printer = None if as_json else StreamPrinter(terminal.out, show_thinking=terminal.out.is_terminal)
            started = time.perf_counter()
            disposition = "error"
            with asyncio.Runner() as runner:
                result, _ = execute_turn(runner, runtime, session, prompt, attachments=attachments or None,
                                         on_stream=printer)
            disposition = "abandoned" if result is None or result.cancelled else (
                "error" if result.error else "completed")
        finally:
            runtime.sessions.end(session, disposition)
    finally:
        runtime.close()
    code = outcome_code(result)
    if as_json:
        terminal.raw(json.dumps(result_document(session.id, result, code), ensure_ascii=False) + "\n")
        if result is not None and result.error:
            terminal.fail(result.error)  # stdout stays one JSON document; stderr says it for people
    else:
        if printer is not None:
            printer.finish()
        if result is not None and result.error:
            terminal.fail(result.error)
        elif code is ExitCode.CANCELLED:
            terminal.fail("cancelled")
        if result is not None:
            terminal.err.print(turn_summary(result, time.perf_counter() - started) + f" · session {session.id}",
                               style="dim", markup=False)
    return code
