"""Lists as rows: a rich table on a terminal, or plain tab-separated lines for other programs.

When stdout is not a terminal (or with `--plain`) every list prints one line per row, fields
separated by tabs, no header, nothing wrapped or cut: `metis models | grep openrouter:` and
`metis sessions list | cut -f1` see whole ids. Pure rendering of records the stores and
registries return; no queries, no decisions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from rich.table import Table

from metis_core.agent.confirmation import ConfirmationPolicy
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.cli.output import Terminal
from metis_core.cli.render import cost_text
from metis_core.cli.spend import SpendRow
from metis_core.models.pricing import PriceTable
from metis_core.models.registry import ModelInfo
from metis_core.store.records import SessionRecord

CAPABILITY_FLAGS = (
    ("tools", "supports_tools"), ("images", "supports_images"), ("thinking", "supports_thinking"),
    ("structured", "supports_structured_output"), ("caching", "supports_prompt_caching"),
)  # fmt: skip


@dataclass
class Rows:
    """A list to print: column names and rows of text."""

    columns: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)

    def table(self) -> Table:
        table = Table()
        for column in self.columns:
            table.add_column(column, overflow="fold")
        for row in self.rows:
            table.add_row(*row)
        return table

    def plain(self) -> str:
        """One tab-separated line per row; tabs and line breaks inside a field become spaces."""
        return "".join("\t".join(" ".join(cell.split()) for cell in row) + "\n" for row in self.rows)


def print_rows(terminal: Terminal, rows: Rows, *, plain: bool = False) -> None:
    """A table on a terminal; plain rows when asked or when stdout goes to another program."""
    if plain or not terminal.out.is_terminal:
        terminal.raw(rows.plain())
    else:
        terminal.out.print(rows.table(), soft_wrap=False)


def sessions_rows(records: Iterable[SessionRecord]) -> Rows:
    rows = Rows(("session", "title", "model", "updated", "cost", "tokens in/out", "ended"))
    for r in records:
        rows.rows.append((
            r.id, r.title or "", r.active_model or "(default)", r.updated_at.strftime("%Y-%m-%d %H:%M"),
            cost_text(r.total_cost_usd, r.unpriced_message_count),
            f"{r.total_input_tokens}/{r.total_output_tokens}", r.disposition or "",
        ))
    return rows


def sessions_table(records: Iterable[SessionRecord]) -> Table:
    return sessions_rows(records).table()


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
    table = Table(title=title, title_justify="left")
    for column in (key_title, "calls", "tokens in", "tokens out", "cost"):
        table.add_column(column, justify="left" if column == key_title else "right", overflow="fold")
    for row in [*rows, *([whole] if whole is not None else [])]:
        cost = cost_text(row.cost_usd, row.unpriced_calls)
        table.add_row(row.key, str(row.calls), f"{row.input_tokens:,}", f"{row.output_tokens:,}", cost,
                      style="bold" if row is whole else None)
    return table


def tools_table(registry: ToolRegistry, policy: ConfirmationPolicy) -> Table:
    table = Table()
    for column in ("tool", "side effects", "asks first", "description"):
        table.add_column(column, overflow="fold")
    for definition in registry.definitions():
        asks = "no"
        if definition.needs_confirmation:
            asks = "yes" if policy.needs_asking(definition.name) else "no (allowed)"
        table.add_row(definition.name, definition.side_effects.value, asks, definition.description)
    return table
