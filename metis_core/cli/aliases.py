"""`metis aliases set|list|remove`: short names for models and chains, kept in config.yaml.

`set NAME MODEL` checks MODEL resolves (an id, a bare name, another alias or a chain) and that
NAME would not shadow a model or make a cycle, then writes `aliases:`. Built-in aliases
(models.yaml) are listed beside the user's; removing one of those is refused with the reason.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from metis_core.cli.config_edit import change_config, read_config_data
from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.rows import Rows, print_rows
from metis_core.cli.runtime_setup import load_cli_config
from metis_core.errors import MetisError
from metis_core.models.registry import ModelRegistry

app = typer.Typer(help="Set, list and remove model aliases (config.yaml aliases:).", no_args_is_help=True,
                  add_completion=False)


@app.command("list")
@guarded
def list_aliases(plain: PlainOption = False) -> None:
    """Every alias and the model ids it names; `config` marks the ones in your config.yaml."""
    config = load_cli_config()
    terminal = Terminal.open(config)
    registry = ModelRegistry.load(config)
    mine = set(config.aliases) | set(config.chains)
    rows = Rows(("alias", "models", "from"))
    for name, members in sorted(registry.aliases().items()):
        try:
            resolved = registry.parse(name)  # what it names in the end: bare names and inner aliases expanded
        except MetisError:
            resolved = members
        rows.rows.append((name, ", ".join(resolved), "config" if name in mine else "built-in"))
    print_rows(terminal, rows, plain=plain)


@app.command("set")
@guarded
def set_alias(
    name: Annotated[str, typer.Argument(help="The short name, e.g. fast.")],
    model: Annotated[str, typer.Argument(help="What it names: a model id, bare name, alias or chain a,b,c.")],
) -> None:
    """Make NAME stand for MODEL (a chain `a,b` falls back in order)."""
    config = load_cli_config()
    terminal = Terminal.open(config)
    if any(ch in name for ch in ":, ") or not name:
        raise UsageProblem(f"alias name {name!r} must not be empty or contain ':', ',' or spaces")
    registry = ModelRegistry.load(config)
    if name not in registry.aliases() and _is_model_name(registry, name):
        raise UsageProblem(f"{name!r} already names a model; choose another alias name")
    config.chains.pop(name, None)
    config.aliases[name] = model
    ModelRegistry.load(config).parse(name)  # refuses an unknown target or a cycle (exit 2)

    def write(data: dict[str, Any]) -> None:
        if name in (data.get("chains") or {}):
            del data["chains"][name]
        aliases = data.setdefault("aliases", {})
        if not isinstance(aliases, dict):
            raise UsageProblem("config.yaml's aliases is not a mapping; fix it first")
        aliases[name] = model

    change = change_config(write, config.home)
    terminal.out.print(f"{name} = {model}", markup=False)
    if change.commented_copy:
        terminal.warn(f"config.yaml was rewritten without its comments; the old text is in {change.commented_copy}")


@app.command("remove")
@guarded
def remove_alias(name: Annotated[str, typer.Argument(help="An alias set with `metis aliases set`.")]) -> None:
    """Remove an alias from config.yaml."""
    config = load_cli_config()
    terminal = Terminal.open(config)
    data = read_config_data(config.path)
    if name not in (data.get("aliases") or {}) and name not in (data.get("chains") or {}):
        if name in ModelRegistry.load(config).aliases():
            raise UsageProblem(f"{name!r} is a built-in alias (models.yaml); it can be redefined, not removed")
        raise UsageProblem(f"no alias {name!r} in {config.path}; `metis aliases list` shows them")

    def write(data: dict[str, Any]) -> None:
        for section in ("aliases", "chains"):
            if name in (data.get(section) or {}):
                del data[section][name]
                if not data[section]:
                    del data[section]

    change_config(write, config.home)
    terminal.out.print(f"removed alias {name}", markup=False)


def _is_model_name(registry: ModelRegistry, name: str) -> bool:
    try:
        registry.parse(name)
    except MetisError:  # unknown or ambiguous: the name is free for an alias
        return False
    return True
