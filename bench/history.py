"""The judged rows across runs of the same metis-core code: each run's figure, their median, how often met.

One run's verdict moves with the machine's state during that run (docs/performance.md, "Noise").
Every run is kept as bench/results/<timestamp>.json with the git tree of metis_core/ it measured,
so the runs of one tree can be read side by side: what the code does across machine states, not
in one window. A run made with uncommitted changes to metis_core/ never counts as its tree's, and
smoke runs are not kept at all. Nothing here measures or re-judges: each figure and verdict is
the one its run recorded.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.figures import METIS

MAX_RUNS = 8
"""The most recent runs shown; older runs of the same code stay in bench/results/."""


@dataclass
class RowHistory:
    """One judged row of metis-core over runs: (timestamp, ratio or value, met) in time order."""

    row: str
    target: str
    unit: str
    judged_on_ratio: bool
    runs: list[tuple[str, float, bool]] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(figure for _, figure, _ in self.runs)

    @property
    def met(self) -> int:
        return sum(1 for _, _, passed in self.runs if passed)


def tree_of(run: dict[str, Any]) -> str | None:
    """The metis_core/ tree a run measured, or None when unknown or measured with uncommitted edits."""
    code = run.get("code") or {}
    return code.get("metis_core_tree") if code.get("modified") is False else None


def same_code_runs(latest: dict[str, Any], directory: Path) -> list[dict[str, Any]]:
    """The last MAX_RUNS kept runs (full or --only) of latest's metis_core/ tree, oldest first."""
    tree = tree_of(latest)
    if tree is None:
        return []
    runs = []
    for path in directory.glob("2*.json"):  # <timestamp>.json: latest.json and *.tmp are not runs
        run = json.loads(path.read_text())
        if not run.get("quick") and tree_of(run) == tree:
            runs.append(run)
    runs.sort(key=lambda run: run["timestamp"])
    return runs[-MAX_RUNS:]


def judged_rows(runs: list[dict[str, Any]]) -> list[RowHistory]:
    """Every row with a metis-core target, in the order the runs list them."""
    rows: dict[str, RowHistory] = {}
    for run in runs:
        for figure in run["figures"]:
            if figure["impl"] != METIS or figure["passed"] is None:
                continue
            on_ratio = figure["ratio"] is not None
            history = rows.setdefault(figure["row"], RowHistory(figure["row"], figure["target"] or "",
                                                                figure["unit"], on_ratio))
            history.runs.append((run["timestamp"], figure["ratio"] if on_ratio else figure["value"],
                                 bool(figure["passed"])))
    return list(rows.values())
