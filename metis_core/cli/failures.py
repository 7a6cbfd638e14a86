"""Failures as one red line and a documented exit code — never a traceback.

`guarded` wraps every command: a MetisError prints its message (keys scrubbed) and exits with
the code exit_codes.py assigns; Ctrl-C exits 130; anything unexpected prints one line with the
exception type and exits 1 (set METIS_DEBUG=1 to see the traceback). `clarify` turns a routing
refusal whose only cause is a missing key into the MissingAPIKeyError that names the variable.
"""

from __future__ import annotations

import functools
import os
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import typer

from metis_core.cli.exit_codes import ExitCode, exit_code_for
from metis_core.cli.output import Terminal
from metis_core.errors import MetisError, MissingAPIKeyError

if TYPE_CHECKING:
    from metis_core.config import MetisConfig

P = ParamSpec("P")
R = TypeVar("R")

DEBUG_ENV = "METIS_DEBUG"


def clarify(error: MetisError, config: MetisConfig | None) -> MetisError:
    """A NoRoutableModelError rejected only for missing keys becomes MissingAPIKeyError (exit 3)."""
    if config is None or type(error).__name__ != "NoRoutableModelError":
        return error
    from metis_core.routing.engine import NoRoutableModelError  # loaded already: one was raised

    if not isinstance(error, NoRoutableModelError):
        return error
    rejected = [v for v in error.chain if v.verdict == "rejected"]
    missing = [v for v in rejected if v.validation_failure == "not_configured" and "no API key" in v.reason]
    if not rejected or len(missing) != len(rejected) or not missing[0].candidate_model:
        return error
    provider = missing[0].candidate_model.partition(":")[0]
    return MissingAPIKeyError(provider, config.api_key_env_vars(provider)[0])


def _config_or_none() -> MetisConfig | None:
    """The configuration, if it loads: its keys are scrubbed from the error line too."""
    from metis_core.config import load_config  # only on a failure: commands that load no config stay light

    try:
        return load_config()
    except MetisError:
        return None


def report_failure(error: BaseException, terminal: Terminal | None = None) -> ExitCode:
    terminal = terminal or Terminal.open(_config_or_none())
    code = exit_code_for(error)
    if isinstance(error, KeyboardInterrupt):
        terminal.fail("cancelled")
    elif isinstance(error, MetisError):
        terminal.fail(str(error))
    else:
        terminal.fail(f"unexpected {type(error).__name__}: {error} (set {DEBUG_ENV}=1 to see the traceback)")
        if os.environ.get(DEBUG_ENV):
            terminal.err.print(traceback.format_exc(), markup=False)
    return code


def guarded(command: Callable[P, R]) -> Callable[P, R]:
    """Run a command body; turn whatever escapes it into a red line and an exit code."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.BadParameter):
            raise
        except (Exception, KeyboardInterrupt) as error:
            raise typer.Exit(int(report_failure(error))) from None

    return run
