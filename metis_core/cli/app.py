"""The `metis` console script: the command table and `main()`.

Commands are registered by name with `lazy(...)` and imported only when they run, so `metis
--help` and `metis --version` load no agent, store or rich code (lazy_commands.py). To add a
command, write it in its own module and add one `lazy` line below (docs/cli.md, "Adding a
command"); an eager `app.add_typer(...)` / `app.command(...)` still works, it only costs start-up.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from metis_core.cli.lazy_commands import LazyGroup, lazy

app = typer.Typer(
    name="metis",
    cls=LazyGroup,
    help="One conversation across LLM providers, with every action on the record.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # the root help is plain click text: rendering it with rich costs ~100 ms
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("metis-core")
        except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
            number = "unknown"
        typer.echo(f"metis {number}")
        raise typer.Exit()


@app.callback()
def root(
    show_version: Annotated[bool, typer.Option("--version", "-V", is_eager=True, callback=_print_version,
                                               help="Print the version and exit.")] = False,
) -> None:
    """One conversation across LLM providers, with every action on the record."""


# The everyday commands first, as `metis --help` lists them.
lazy("chat", "metis_core.cli.chat_command:chat", "Chat interactively: streamed answers, /commands, @model per message.")
lazy("run", "metis_core.cli.run_command:run", "Send one message and print the answer (for scripts; stdin is appended).")
lazy("demo", "metis_core.cli.demo.command:demo", "A tour of the real stack, offline, against a scripted model.")
lazy("models", "metis_core.cli.models:app", "The model registry; `metis models default [MODEL]` sets the default.")
lazy("aliases", "metis_core.cli.aliases:app", "Set, list and remove model aliases.")
lazy("keys", "metis_core.cli.keys:app", "Store and list provider API keys (config.yaml, mode 0600).")
lazy("templates", "metis_core.cli.templates:app", "Saved system prompts, models and options for `run -t`.")
lazy("cost", "metis_core.cli.cost:cost", "What the model calls cost, by session, model and day.")
lazy("sessions", "metis_core.cli.sessions:app", "List, show, export, import and delete stored sessions.")
lazy("trace", "metis_core.cli.trace:app", "Show, replay, export and prune the event trace.")
lazy("backup", "metis_core.cli.admin:backup", "Snapshot the database (consistent while metis runs).")
lazy("restore", "metis_core.cli.admin:restore", "Replace the database with a backup (keeps the replaced one).")
lazy("db", "metis_core.cli.db_commands:app", "Migrate, inspect and copy the database (SQLite or PostgreSQL).")
lazy("audit", "metis_core.cli.admin:audit_app", "Export the audit trail.")
lazy("serve", "metis_core.cli.serve:serve", "Web view, JSON API, HTTP chat and live events on localhost.")
lazy("replay", "metis_core.cli.replay:replay", "Replay stored sessions on another model and compare.")
lazy("mcp", "metis_core.cli.mcp_servers:app", "MCP servers of config.yaml and the tools they offer.")
lazy("memory", "metis_core.cli.memory_history:app", "Saved versions of MEMORY.md and USER.md: history, show, restore.")
lazy("skills", "metis_core.cli.skills:app", "Skills: list, show, create, edit and import SKILL.md folders.")
lazy("feedback", "metis_core.cli.learning:feedback", "Rate a turn or a session (feeds the learning loop).")
lazy("eval", "metis_core.cli.learning:eval_app", "Score turns and sessions with the evaluator.")
lazy("patterns", "metis_core.cli.learning:patterns_app", "What the pattern store learned; clear it.")
lazy("learn", "metis_core.cli.learning:learn", "Replay stored turns on cheaper models and learn where they do well.")
lazy("users", "metis_core.cli.users:app", "Users behind gateway keys: create, list, disable, export, forget.")
lazy("gateway", "metis_core.cli.gateway:app", "OpenAI/Anthropic-compatible endpoints in front of every provider.")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)  # ExitCode.CANCELLED, without importing exit_codes (and the agent) at start-up
