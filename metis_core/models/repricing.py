"""Stored model calls priced again with the current table, beside what was recorded (§6.4).

Each call keeps the cost and `pricing_version` it was stored with; `reprice` computes what the
same usage costs under the table in force on a chosen day (default today) and sums both per
model. It only reads: stored messages and their usage are never changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from metis_core.messages import Message
from metis_core.models.pricing import PriceTable


@dataclass
class PricedFigure:
    """One side of the comparison: a sum, the versions it was priced with, and what had no price."""

    cost_usd: Decimal = field(default_factory=lambda: Decimal(0))
    pricing_versions: set[str] = field(default_factory=set)
    unpriced_calls: int = 0

    def add(self, cost: Decimal | None, version: str | None) -> None:
        if cost is None:
            self.unpriced_calls += 1
            return
        self.cost_usd += cost
        if version is not None:
            self.pricing_versions.add(version)

    def merge(self, other: PricedFigure) -> None:
        self.cost_usd += other.cost_usd
        self.pricing_versions |= other.pricing_versions
        self.unpriced_calls += other.unpriced_calls

    def to_json(self) -> dict[str, object]:
        return {"cost_usd": format(self.cost_usd, "f"), "pricing_versions": sorted(self.pricing_versions),
                "unpriced_calls": self.unpriced_calls}


@dataclass
class RepricedRow:
    """The calls of one model (or the total): stored figure and current figure."""

    key: str
    calls: int = 0
    stored: PricedFigure = field(default_factory=PricedFigure)
    current: PricedFigure = field(default_factory=PricedFigure)

    @property
    def difference_usd(self) -> Decimal:
        return self.current.cost_usd - self.stored.cost_usd

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "calls": self.calls, "stored": self.stored.to_json(),
                "current": self.current.to_json(), "difference_usd": format(self.difference_usd.normalize(), "f")}


@dataclass
class Repricing:
    priced_on: date
    """The day whose table the current figures use."""
    rows: list[RepricedRow]
    total: RepricedRow

    def to_json(self) -> dict[str, object]:
        return {"priced_on": self.priced_on.isoformat(), "model": [row.to_json() for row in self.rows],
                "total": self.total.to_json()}


def reprice(calls: Iterable[Message], table: PriceTable, *, on: date | None = None) -> Repricing:
    """Each assistant message's stored cost beside its usage priced with `table` as of `on` (today).

    Messages without usage count as unpriced on both sides; the messages are not modified.
    """
    day = on or date.today()
    rows: dict[str, RepricedRow] = {}
    for message in calls:
        model = message.metadata.model or "?"
        row = rows.setdefault(model, RepricedRow(model))
        row.calls += 1
        usage = message.metadata.usage
        if usage is None:
            row.stored.add(None, None)
            row.current.add(None, None)
            continue
        row.stored.add(usage.cost_usd, usage.pricing_version)
        row.current.add(*table.cost(usage, model, day) if message.metadata.model else (None, None))
    total = RepricedRow("total")
    for row in rows.values():
        total.calls += row.calls
        total.stored.merge(row.stored)
        total.current.merge(row.current)
    return Repricing(day, sorted(rows.values(), key=lambda r: r.key), total)
