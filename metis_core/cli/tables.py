"""Tables of what needs the registries or the agent: models, spend, tools (rows.py prints them).

Pure rendering of records the stores and registries return; no queries, no decisions. Lists that
need none of that (sessions, keys) live in rows.py, so listing them stays quick.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from metis_core.cli.rows import Rows, cost_text
from metis_core.cli.rows import print_rows as print_rows  # callers of tables.py print with it
from metis_core.cli.rows import sessions_table as sessions_table
from metis_core.models.pricing import PriceTable
from metis_core.models.registry import ModelInfo

if TYPE_CHECKING:  # only `/tools` in the chat passes these; the listing commands never load the agent
    from rich.table import Table

    from metis_core.agent.confirmation import ConfirmationPolicy
    from metis_core.agent.tools.registry import ToolRegistry
    from metis_core.cli.spend import SpendRow

CAPABILITY_FLAGS = (
    ("tools", "supports_tools"), ("images", "supports_images"), ("thinking", "supports_thinking"),
    ("structured", "supports_structured_output"), ("caching", "supports_prompt_caching"),
)  # fmt: skip


def models_rows(models: Iterable[ModelInfo], prices: PriceTable) -> Rows:
    rows = Rows(("model", "name", "context", "max out", "capabilities", "$/M in", "$/M out", "aliases"))
    for info in models:
        caps = info.capabilities
        flags = " ".join(name for name, attr in CAPABILITY_FLAGS if getattr(caps, attr))
        price = prices.price_for(info.id)
        money_in = format(price.per_million["input"], "f") if price else "-"
        money_out = format(price.per_million["output"], "f") if price else "-"
        rows.rows.append((info.id, info.display_name or "", f"{caps.max_context_tokens:,}",
                          f"{caps.max_output_tokens:,}", flags, money_in, money_out, ", ".join(info.aliases)))
    return rows


def spend_table(title: str, key_title: str, rows: list[SpendRow], whole: SpendRow | None = None) -> Table:
    from rich.table import Table  # a table for a terminal; piped lists print Rows.plain() without rich's tables

    table = Table(title=title, title_justify="left")
    for column in (key_title, "calls", "tokens in", "tokens out", "cost"):
        table.add_column(column, justify="left" if column == key_title else "right", overflow="fold")
    for row in [*rows, *([whole] if whole is not None else [])]:
        cost = cost_text(row.cost_usd, row.unpriced_calls)
        table.add_row(row.key, str(row.calls), f"{row.input_tokens:,}", f"{row.output_tokens:,}", cost,
                      style="bold" if row is whole else None)
    return table


def tools_table(registry: ToolRegistry, policy: ConfirmationPolicy) -> Table:
    from rich.table import Table

    table = Table()
    for column in ("tool", "side effects", "asks first", "description"):
        table.add_column(column, overflow="fold")
    for definition in registry.definitions():
        asks = "no"
        if definition.needs_confirmation:
            asks = "yes" if policy.needs_asking(definition.name) else "no (allowed)"
        table.add_row(definition.name, definition.side_effects.value, asks, definition.description)
    return table
