"""`metis models`: the model registry with capabilities and prices; `metis models default [MODEL]`.

Built from the registry and price table as the configuration shapes them (user models, aliases
and price overrides included). It lists catalog entries; providers that accept any model name
(ollama, openrouter, openai_compatible) take names beyond these. `default` shows or sets
`defaults.model` in config.yaml, after checking the name resolves. `update openrouter` reads
OpenRouter's published model list into METIS_HOME (models/openrouter_catalog.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from metis_core.cli.config_edit import change_config
from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.options import PlainOption
from metis_core.cli.output import Terminal
from metis_core.cli.runtime_setup import fallback_default_model, load_cli_config
from metis_core.cli.tables import models_rows, print_rows
from metis_core.models.pricing import PriceTable
from metis_core.models.registry import ModelRegistry

app = typer.Typer(help="The model registry: capabilities, context windows and prices per million tokens.",
                  invoke_without_command=True, add_completion=False)


@app.callback(invoke_without_command=True)
@guarded
def models(
    ctx: typer.Context,
    provider: Annotated[str | None, typer.Option(help="Only this provider's models.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array for scripts.")] = False,
    plain: PlainOption = False,
) -> None:
    """The registry: capabilities, context windows and prices per million tokens."""
    if ctx.invoked_subcommand is not None:
        return
    config = load_cli_config()
    terminal = Terminal.open(config)
    registry = ModelRegistry.load(config)
    if provider is not None and provider not in registry.providers():
        raise UsageProblem(f"unknown provider {provider!r}; choose one of {', '.join(registry.providers())}")
    prices = PriceTable.load(config)
    infos = registry.models(provider)
    if as_json:
        rows = []
        for info in infos:
            price = prices.price_for(info.id)
            rows.append({
                "id": info.id, "display_name": info.display_name, "aliases": list(info.aliases),
                "capabilities": info.capabilities.model_dump(),
                "price_per_million": {k: format(v, "f") for k, v in price.per_million.items()} if price else None,
                "pricing_version": price.pricing_version if price else None,
            })
        terminal.raw(json.dumps(rows, indent=2) + "\n")
        return
    print_rows(terminal, models_rows(infos, prices), plain=plain)
    aliases = registry.aliases()
    if aliases and terminal.out_is_terminal and not plain:
        terminal.out.print("aliases: " + " · ".join(f"{a} = {', '.join(m)}" for a, m in sorted(aliases.items())),
                           style="dim", markup=False)


@app.command("default")
@guarded
def default(
    model: Annotated[str | None, typer.Argument(help="Model id, alias, bare name or chain; omit to show it.")]
    = None,
) -> None:
    """Show the default model of new sessions, or set it (config.yaml defaults.model)."""
    config = load_cli_config()
    terminal = Terminal.open(config)
    if model is None:
        configured = config.defaults.model
        shown = configured or fallback_default_model(config)
        source = "config.yaml" if configured else "first provider with a key" if shown else ""
        terminal.raw(f"{shown}\t({source})\n" if shown else "")
        if not shown:
            terminal.warn("no default model: set one with `metis models default MODEL`")
        return
    ModelRegistry.load(config).parse(model)  # an unknown name is refused (exit 2) before anything is written

    def set_default(data: dict[str, object]) -> None:
        defaults = data.setdefault("defaults", {})
        if not isinstance(defaults, dict):
            raise UsageProblem("config.yaml's defaults is not a mapping; fix it first")
        defaults["model"] = model

    change = change_config(set_default, config.home)
    terminal.out.print(f"default model: {model} (in {change.path})", markup=False)
    if change.commented_copy:
        terminal.warn(f"config.yaml was rewritten without its comments; the old text is in {change.commented_copy}")


@app.command("update")
@guarded
def update(
    provider: Annotated[str, typer.Argument(help="Whose published model list to read: openrouter.")],
    from_file: Annotated[Path | None, typer.Option("--from", help="A saved JSON of the list; omit to fetch it.")]
    = None,
) -> None:
    """Read a provider's published model list into the registry and price table (METIS_HOME)."""
    from metis_core.models.openrouter_catalog import LISTING_URL, catalog_from_listing, write_catalog
    from metis_core.models.price_file import PriceEntry
    from metis_core.models.registry_file import check_model_entry, user_model_entry

    if provider != "openrouter":
        raise UsageProblem(f"no published model list is read for {provider!r}; only openrouter has one")
    config = load_cli_config()
    terminal = Terminal.open(config)
    if from_file is None:
        text, source = _fetch_listing(), LISTING_URL
    else:
        try:
            text, source = from_file.read_bytes(), str(from_file)
        except OSError as exc:
            raise UsageProblem(f"cannot read {from_file}: {exc.strerror or exc}") from None
    catalog = catalog_from_listing(text, source)
    for model_id, raw in catalog["models"].items():  # what the registry and price table will accept
        check_model_entry(model_id, user_model_entry(model_id, raw, source), source)
    for model_id, raw in catalog["prices"].items():
        PriceEntry.from_raw(raw, f"{source}: {model_id}")
    path = write_catalog(config.home, catalog)
    terminal.out.print(f"{len(catalog['models'])} openrouter models ({len(catalog['prices'])} priced) "
                       f"written to {path}", markup=False)


def _fetch_listing() -> bytes:
    import httpx

    from metis_core.models.openrouter_catalog import LISTING_URL, ModelListError

    try:
        response = httpx.get(LISTING_URL, timeout=30.0, follow_redirects=True)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise ModelListError(f"could not fetch {LISTING_URL} ({type(exc).__name__}: {exc}); save it from a "
                             "connected machine and pass it with --from FILE") from None
    return response.content
