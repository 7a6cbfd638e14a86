"""`metis cost --reprice`: the stored calls' recorded cost beside what they cost under today's table.

Reads the stored messages and the price table the configuration shapes (user `prices:` included)
and prints both figures with their pricing versions, per model and in total. Nothing is written:
stored usage keeps the cost and version it was recorded with (models/repricing.py does the sums).
"""

from __future__ import annotations

import json

from rich.table import Table

from metis_core.cli.output import Terminal
from metis_core.cli.render import format_usd
from metis_core.messages import Message
from metis_core.models.pricing import PriceTable
from metis_core.models.repricing import PricedFigure, Repricing, reprice


def _figure(figure: PricedFigure) -> str:
    versions = ", ".join(sorted(figure.pricing_versions)) or "-"
    unpriced = f" (+{figure.unpriced_calls} unpriced)" if figure.unpriced_calls else ""
    return f"{format_usd(figure.cost_usd)}{unpriced} @ {versions}"


def repricing_table(result: Repricing) -> Table:
    table = Table(title=f"repriced with the table in force on {result.priced_on}", title_justify="left")
    for column in ("model", "calls", "stored cost @ versions", "current cost @ version", "difference"):
        table.add_column(column, justify="left" if column == "model" else "right", overflow="fold")
    for row in [*result.rows, result.total]:
        sign = "+" if row.difference_usd > 0 else ("-" if row.difference_usd < 0 else "")
        table.add_row(row.key, str(row.calls), _figure(row.stored), _figure(row.current),
                      sign + format_usd(abs(row.difference_usd)), style="bold" if row is result.total else None)
    return table


def show_repricing(terminal: Terminal, calls: list[Message], prices: PriceTable, *, as_json: bool) -> None:
    result = reprice(calls, prices)
    if as_json:
        terminal.raw(json.dumps({"reprice": result.to_json()}, indent=2) + "\n")
    elif not calls:
        terminal.out.print("no model calls recorded yet", markup=False)
    else:
        terminal.out.print(repricing_table(result), soft_wrap=False)
