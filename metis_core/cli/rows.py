"""Lists as rows: a rich table on a terminal, or plain tab-separated lines for other programs.

When stdout is not a terminal (or with `--plain`) every list prints one line per row, fields
separated by tabs, no header, nothing wrapped or cut: `metis models | grep openrouter:` and
`metis sessions list | cut -f1` see whole ids. On a terminal the first column (the id) is never
wrapped or cut. Also money as lists show it. Imports nothing of the agent, so listings stay quick.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from metis_core.cli.output import Terminal

if TYPE_CHECKING:  # rich's tables load for a person at a terminal, not for rows piped to a program
    from rich.table import Table

    from metis_core.store.records import SessionRecord

PREVIEW_CHARS = 160


@dataclass
class Rows:
    """A list to print: column names and rows of text."""

    columns: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)

    def table(self) -> Table:
        from rich.table import Table

        table = Table()
        for index, column in enumerate(self.columns):
            if index == 0:  # the id: whole, on one line, at any width (the other columns fold instead)
                widest = max((len(row[0]) for row in self.rows), default=len(column))
                table.add_column(column, no_wrap=True, min_width=max(widest, len(column)))
            else:
                table.add_column(column, overflow="fold")
        for row in self.rows:
            table.add_row(*row)
        return table

    def plain(self) -> str:
        """One tab-separated line per row; tabs and line breaks inside a field become spaces."""
        return "".join("\t".join(" ".join(cell.split()) for cell in row) + "\n" for row in self.rows)


def print_rows(terminal: Terminal, rows: Rows, *, plain: bool = False) -> None:
    """A table on a terminal; plain rows when asked or when stdout goes to another program."""
    if plain or not terminal.out_is_terminal:
        terminal.raw(rows.plain())
    else:
        terminal.out.print(rows.table(), soft_wrap=False)


def sessions_rows(records: Iterable[SessionRecord], answered: Mapping[str, str] | None = None) -> Rows:
    """`answered`: the model of each session's last answer (SessionStore.answering_models), shown
    before the model the session asks for, which may have been routed elsewhere."""
    rows = Rows(("session", "title", "model", "updated", "cost", "tokens in/out", "ended"))
    for r in records:
        rows.rows.append((
            r.id, r.title or "", (answered or {}).get(r.id) or r.active_model or "(default)",
            r.updated_at.strftime("%Y-%m-%d %H:%M"),
            cost_text(r.total_cost_usd, r.unpriced_message_count),
            f"{r.total_input_tokens}/{r.total_output_tokens}", r.disposition or "",
        ))
    return rows


def sessions_table(records: Iterable[SessionRecord], answered: Mapping[str, str] | None = None) -> Table:
    return sessions_rows(records, answered).table()


def format_usd(amount: Decimal | float | None) -> str:
    """$0 for nothing, six decimals under a cent, four above; '-' for unpriced."""
    if amount is None:
        return "-"
    value = Decimal(str(amount))
    if value == 0:
        return "$0"
    if abs(value) < Decimal("0.01"):
        return "$" + format(value.quantize(Decimal("0.000001")), "f")
    return "$" + format(value.quantize(Decimal("0.0001")), "f")


def cost_text(amount: Decimal, unpriced_calls: int) -> str:
    """A total that may include unpriced calls: `$0.0012`, `≥ $0.0012, 2 calls unpriced`, or
    `cost unknown (1 call unpriced)`: never `$0` for a call nobody priced."""
    if not unpriced_calls:
        return format_usd(amount)
    calls = f"{unpriced_calls} call{'' if unpriced_calls == 1 else 's'} unpriced"
    return f"cost unknown ({calls})" if amount == 0 else f"≥ {format_usd(amount)}, {calls}"


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
