"""One measured figure, and the targets metis-core is held to.

A `Figure` is one implementation's value on one row, with the floor measured in the same run and
the ratio between them; only metis-core's figures are judged against a target (peers are there
for comparison). Pure data: cases produce figures, report.py prints and stores them.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any, Literal

METIS = "metis-core"
FLOOR = "raw httpx (floor)"
AIOHTTP_FLOOR = "raw aiohttp (async floor)"
"""The async call rows' floor (bench/peers/aiohttp_floor.py): metis's async calls ride aiohttp."""
HANDWRITTEN = "hand-written mapping (floor)"
MAPPING_REFERENCE = "floor + per-call mapping (reference)"
"""Key of the call rows' reference line (bench/peers/floor_mapping.py); not a peer."""


@dataclass(frozen=True, slots=True)
class Target:
    kind: Literal["ratio_max", "ratio_min", "over_max", "max", "min", "reference_max", "report"]
    bound: float = 0.0
    reference: str = ""
    """For `reference_max`: the implementation whose figure on the same row is the bound (a reference line)."""

    def describe(self, unit: str) -> str:
        return {
            "ratio_max": f"<= {self.bound:g}x floor",
            "ratio_min": f">= {self.bound:g}x floor",
            "over_max": f"<= floor + {self.bound:g} {unit}",
            "max": f"<= {self.bound:g} {unit}",
            "min": f">= {self.bound:,.0f} {unit}",
            "reference_max": f"<= {self.reference}",
            "report": "report",
        }[self.kind]

    def met(self, value: float, ratio: float | None, floor: float | None = None,
            reference: float | None = None) -> bool | None:
        if self.kind == "report":
            return None
        if self.kind == "reference_max":
            return None if reference is None else value <= reference
        if self.kind == "over_max":
            return None if floor is None else value - floor <= self.bound
        if self.kind in ("ratio_max", "ratio_min"):
            if ratio is None:
                return None
            return ratio <= self.bound if self.kind == "ratio_max" else ratio >= self.bound
        return value <= self.bound if self.kind == "max" else value >= self.bound


@dataclass(slots=True)
class Figure:
    case: str
    """The suite it belongs to: startup, call, stream, translate, cost, store, chain."""
    row: str
    """What was measured, e.g. "non-streaming call · anthropic · sync"."""
    impl: str
    value: float
    unit: str
    samples: int
    floor: float | None = None
    target: Target | None = None
    note: str = ""
    higher_is_better: bool = False
    is_floor: bool = False
    spread: tuple[float, float] | None = None
    """Quartiles of the ratio to the floor over this run's paired rounds (calls: each round of
    blocks; cold start: each run), where a row has them: how far the machine moved the ratio."""
    reference: float | None = None
    """The reference line's value on this row, for a `reference_max` target (see `with_reference`)."""

    @property
    def ratio(self) -> float | None:
        if self.floor is None or self.floor == 0 or self.is_floor:
            return None
        return self.value / self.floor

    @property
    def passed(self) -> bool | None:
        if self.impl != METIS or self.target is None:
            return None
        return self.target.met(self.value, self.ratio, self.floor, self.reference)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["target"] = self.target.describe(self.unit) if self.target else None
        data["ratio"] = self.ratio
        data["passed"] = self.passed
        return data


def paired_spread(values: list[float], floor_values: list[float], per_round: int = 1) -> tuple[float, float] | None:
    """Quartiles of value/floor taken round by round: each round's median against the floor's median
    of the same round (implementations run side by side, so both saw the same machine). None with
    fewer than four full rounds."""
    rounds = min(len(values), len(floor_values)) // per_round
    if rounds < 4:
        return None
    ratios = []
    for index in range(rounds):
        window = slice(index * per_round, (index + 1) * per_round)
        ratios.append(statistics.median(values[window]) / statistics.median(floor_values[window]))
    low, _, high = statistics.quantiles(ratios, n=4, method="inclusive")
    return low, high


def with_floor(figures: list[Figure], target: Target | None, floor_impl: str = FLOOR) -> list[Figure]:
    """Mark the floor and fill in its value (and metis-core's target) for every figure of the same row."""
    floors = {f.row: f.value for f in figures if f.impl == floor_impl}
    for figure in figures:
        figure.is_floor = figure.impl == floor_impl
        figure.floor = floors.get(figure.row, figure.floor)
        if figure.impl == METIS:
            figure.target = target
    return figures


def with_reference(figures: list[Figure], reference_impl: str) -> list[Figure]:
    """Give every figure the value `reference_impl` has on the same row (a `reference_max` target's bound)."""
    values = {f.row: f.value for f in figures if f.impl == reference_impl}
    for figure in figures:
        figure.reference = values.get(figure.row)
    return figures
