"""`metis run PROMPT --schema schema.json`: one turn whose answer must validate against a JSON Schema.

Prints the validated JSON (one document on stdout); with --json, one document holding the value and
every attempt's record as well. Failures (refusal, exhaustion, a schema that is not JSON Schema)
keep the exit-code contract of `metis run` (exit_codes.py).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metis_core.agent.confirmation import deny_all
from metis_core.agent.structured_turn import StructuredTurnResult, run_structured_turn
from metis_core.cli.cassette_flags import replaying
from metis_core.cli.exit_codes import ExitCode, UsageProblem, exit_code_for
from metis_core.cli.first_run import has_any_provider, local_server_model, only_a_local_server
from metis_core.cli.output import Terminal
from metis_core.cli.run import NOTHING_CONFIGURED, full_prompt, piped_input, result_document
from metis_core.cli.runtime_setup import load_cli_config, open_runtime, require_a_key_for
from metis_core.cli.turn_execution import add_system_prompt, interruptible, split_override
from metis_core.errors import ConfigError, MetisError, OutputSchemaError
from metis_core.structured.policy import OutputPolicy
from metis_core.structured.spec import OutputSpec, output_spec


def read_schema(path: Path) -> OutputSpec:
    """The --schema file as an OutputSpec; UsageProblem naming the file when it is not JSON Schema."""
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageProblem(f"cannot read --schema {path}: {error.strerror}; pass a readable JSON Schema file") from None
    except ValueError as error:
        raise UsageProblem(f"--schema {path} is not JSON ({error}); pass a JSON Schema file") from None
    if not isinstance(schema, dict):
        raise UsageProblem(f"--schema {path} must hold a JSON object (a JSON Schema)")
    try:
        return output_spec(schema, name=str(schema.get("title") or path.stem))
    except OutputSchemaError as error:
        raise UsageProblem(f"--schema {path}: {in_flag_words(str(error))}") from None


LIBRARY_TO_FLAGS = (
    ("raise the retry budget", "raise --retries"), ("enable nl_to_format", "add --nl-to-format"),
    ("the output schema", "the --schema file"), ("output=", "--schema"),
)  # fmt: skip
"""The structured-output library's advice, in the words of `metis run`'s flags."""


def in_flag_words(message: str) -> str:
    for library, flag in LIBRARY_TO_FLAGS:
        message = message.replace(library, flag)
    return message


def structured_document(session_id: str, outcome: StructuredTurnResult | None, code: ExitCode) -> dict[str, Any]:
    """The --json document: `metis run`'s keys plus `value` and `attempts`."""
    turn = outcome.turn if outcome is not None else None
    doc = result_document(session_id, turn, code)
    output = outcome.output if outcome is not None else None
    doc["value"] = output.value_json() if output is not None else None
    failure = turn.failure if turn is not None else None
    attempts = output.attempts if output is not None else (
        (outcome.attempts if outcome is not None else []) or getattr(failure, "attempts", []))
    doc["attempts"] = [a.to_json() for a in attempts]
    if isinstance(doc.get("error"), str):
        doc["error"] = in_flag_words(doc["error"])
    doc["structured_mode"] = output.mode if output is not None else None
    doc["nl_to_format"] = output.nl_to_format if output is not None else False
    return doc


@dataclass(frozen=True)
class SchemaRun:
    """What `metis run --schema` was asked (run_command.py reads the flags)."""

    prompt: str | None
    schema: Path
    model: str | None
    as_json: bool
    workspace: Path
    retries: int = 2
    nl_to_format: bool = False
    system: str | None = None
    unsupported: list[str] = field(default_factory=list)
    """Flags given that a structured run does not take."""


def run_with_schema(request: SchemaRun) -> ExitCode:
    if request.unsupported:
        raise UsageProblem(f"--schema runs one new session without tools or attachments; drop "
                           f"{', '.join(request.unsupported)}")
    config = load_cli_config()
    terminal = Terminal.open(config)
    spec = read_schema(request.schema)
    prompt = full_prompt(request.prompt, piped_input())
    model, as_json = request.model, request.as_json
    policy = OutputPolicy(max_retries=request.retries, nl_to_format=request.nl_to_format)
    if model is None and not has_any_provider(config) and not replaying():
        raise ConfigError(NOTHING_CONFIGURED)
    if model is None and only_a_local_server(config) and not replaying():
        model = local_server_model(terminal, config, ask=False)
    override, body = split_override(prompt)
    runtime = open_runtime(config, confirmer=deny_all, approve_everything=False)
    try:
        if model is not None:
            require_a_key_for(runtime, model)
        session = runtime.sessions.create(request.workspace, model=model)
        disposition = "error"
        try:
            if request.system:
                add_system_prompt(runtime, session, request.system)
            work = run_structured_turn(runtime.turns, session, body, spec, policy=policy, override=override)
            with asyncio.Runner() as runner:
                outcome = runner.run(interruptible(work))
            turn = outcome.turn if outcome is not None else None
            disposition = "abandoned" if turn is None or turn.cancelled else ("error" if turn.error else "completed")
        finally:
            runtime.sessions.end(session, disposition)
    finally:
        runtime.close()
    turn = outcome.turn if outcome is not None else None
    if turn is None or turn.cancelled:
        code = ExitCode.CANCELLED
    elif turn.failure is not None:
        code = exit_code_for(turn.failure) if isinstance(turn.failure, MetisError) else ExitCode.UNEXPECTED
    else:
        code = ExitCode.OK
    if as_json:
        terminal.raw(json.dumps(structured_document(session.id, outcome, code), ensure_ascii=False) + "\n")
    elif outcome is not None and outcome.output is not None:
        terminal.raw(json.dumps(outcome.output.value_json(), ensure_ascii=False, indent=2) + "\n")
    if turn is not None and turn.error:
        terminal.fail(in_flag_words(turn.error))
    elif code is ExitCode.CANCELLED:
        terminal.fail("cancelled")
    return code
