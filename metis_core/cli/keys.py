"""`metis keys set|list`: provider API keys kept in config.yaml (mode 0600), never shown.

`set PROVIDER` reads the key from a hidden prompt on a terminal, or from stdin when piped
(`pass show anthropic | metis keys set anthropic`) — never from the command line, where it would
land in the shell's history. `list` says, per provider, whether a key is set and where it comes
from (an environment variable wins over the file); it never prints a key or any part of one.
"""

from __future__ import annotations

import getpass
import os
import sys
from typing import Annotated, Any

import typer

from metis_core.cli.config_edit import change_config
from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.rows import Rows, print_rows
from metis_core.cli.runtime_setup import load_cli_config
from metis_core.key_env import STANDARD_KEY_ENV

app = typer.Typer(help="Store and list provider API keys (config.yaml, mode 0600).", no_args_is_help=True,
                  add_completion=False)
PROVIDERS = tuple(p for p in STANDARD_KEY_ENV if p != "openai_responses")


def _read_key(provider: str) -> str:
    hidden = sys.stdin.isatty()
    value = (getpass.getpass(f"{provider} API key (not shown): ") if hidden else sys.stdin.readline()).strip()
    if not value:
        raise UsageProblem(f"no key given for {provider}; type it at the prompt or pipe it in")
    if any(ch.isspace() for ch in value):
        raise UsageProblem("a key has no spaces or line breaks; give exactly the key")
    return value


@app.command("set")
@guarded
def set_key(
    provider: Annotated[str, typer.Argument(help=f"One of: {', '.join(PROVIDERS)}.")],
) -> None:
    """Store PROVIDER's API key in config.yaml (read from a hidden prompt or stdin; the file becomes 0600)."""
    config = load_cli_config()
    if provider not in PROVIDERS:
        raise UsageProblem(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
    key = _read_key(provider)

    def write(data: dict[str, Any]) -> None:
        providers = data.setdefault("providers", {})
        if not isinstance(providers, dict):
            raise UsageProblem("config.yaml's providers is not a mapping; fix it first")
        section = providers.setdefault(provider, {})
        if not isinstance(section, dict):
            raise UsageProblem(f"config.yaml's providers.{provider} is not a mapping; fix it first")
        section["api_key"] = key

    change = change_config(write, config.home)
    terminal = Terminal.open(load_cli_config())  # the new key is scrubbed from anything printed after this
    terminal.out.print(f"stored the {provider} key in {change.path} (mode 0600)", markup=False)
    shadow = next((name for name in config.api_key_env_vars(provider) if name in _set_env_vars()), None)
    if shadow:
        terminal.warn(f"note: {shadow} is set in the environment and is used before the file's key")
    if change.commented_copy:
        terminal.warn(f"config.yaml was rewritten without its comments; the old text is in {change.commented_copy}")


@app.command("list")
@guarded
def list_keys(plain: PlainOption = False) -> None:
    """Which providers have a key, and where it comes from (the key itself is never shown)."""
    config = load_cli_config()
    terminal = Terminal.open(config)
    present = _set_env_vars()
    rows = Rows(("provider", "key", "from"))
    for provider in PROVIDERS:
        env = next((name for name in config.api_key_env_vars(provider) if name in present), None)
        in_file = config.providers.get(provider) is not None and config.provider(provider).api_key is not None
        source = f"${env}" if env else str(config.path) if in_file else ""
        rows.rows.append((provider, "set" if source else "-", source))
    print_rows(terminal, rows, plain=plain)


def _set_env_vars() -> set[str]:
    return {name for name, value in os.environ.items() if name.endswith("_API_KEY") and value.strip()}
