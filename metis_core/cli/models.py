"""`metis models`: the model registry with capabilities and current list prices.

Built from the registry and price table as the configuration shapes them (user models, aliases
and price overrides included). It lists catalog entries; providers that accept any model name
(ollama, openrouter, openai_compatible) take names beyond these.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from metis_core.cli.exit_codes import UsageProblem
from metis_core.cli.failures import guarded
from metis_core.cli.output import Terminal
from metis_core.cli.runtime_setup import load_cli_config
from metis_core.cli.tables import models_table
from metis_core.models.pricing import PriceTable
from metis_core.models.registry import ModelRegistry


@guarded
def models(
    provider: Annotated[str | None, typer.Option(help="Only this provider's models.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array for scripts.")] = False,
) -> None:
    """The registry: capabilities, context windows and prices per million tokens."""
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
    terminal.out.print(models_table(infos, prices), soft_wrap=False)
    aliases = registry.aliases()
    if aliases:
        terminal.out.print("aliases: " + " · ".join(f"{a} = {', '.join(m)}" for a, m in sorted(aliases.items())),
                           style="dim", markup=False)
