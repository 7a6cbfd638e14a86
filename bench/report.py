"""Showing and keeping results: the rich table, bench/results/<timestamp>.json and latest.json.

Values are formatted by unit; ratios are to the floor measured in the same run; pass/fail is
shown for metis-core's figures only (peers are there for comparison). The Markdown page
(docs/performance.md) is written by performance_doc.py from the same JSON.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def format_value(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if unit == "events/s":
        return f"{value:,.0f} {unit}"
    if unit == "s":
        return f"{value:.3f} s"
    if unit in ("MB", "ms") or abs(value) < 100:
        return f"{value:,.2f} {unit}" if abs(value) < 10 else f"{value:,.1f} {unit}"
    return f"{value:,.0f} {unit}"


def format_ratio(ratio: float | None, spread: list[float] | tuple[float, float] | None = None) -> str:
    """`1.44x`, and with the run's paired quartiles `1.44x (1.38–1.52)`."""
    if ratio is None:
        return "—"
    if not spread:
        return f"{ratio:.2f}x"
    return f"{ratio:.2f}x ({spread[0]:.2f}–{spread[1]:.2f})"


def verdict(passed: bool | None) -> str:
    return {True: "PASS", False: "FAIL", None: ""}[passed]


def print_table(result: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console(width=160)
    table = Table(title=f"metis-core benchmarks — {result['timestamp']}{' (quick)' if result['quick'] else ''}",
                  show_lines=False)
    for column, justify in (("row", "left"), ("implementation", "left"), ("value", "right"),
                            ("vs floor", "right"), ("target", "left"), ("result", "center")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    previous_row = None
    for figure in result["figures"]:
        row = figure["row"] if figure["row"] != previous_row else ""
        if row and previous_row is not None:
            table.add_section()
        previous_row = figure["row"]
        style = "bold" if figure["impl"] == "metis-core" else ("dim" if figure["is_floor"] else "")
        result_text = verdict(figure["passed"])
        colour = {"PASS": "green", "FAIL": "red"}.get(result_text, "")
        target = figure["target"] or "" if figure["impl"] == "metis-core" else ""
        table.add_row(row, figure["impl"], format_value(figure["value"], figure["unit"]),
                      format_ratio(figure["ratio"], figure.get("spread")), target,
                      f"[{colour}]{result_text}[/{colour}]" if colour else result_text, style=style)
    console.print(table)
    for failure in result["failures"]:
        console.print(f"[red]case {failure['case']} failed:[/red] {failure['error']}")
    for name, reason in result["missing"].items():
        console.print(f"[yellow]{name} left out:[/yellow] {reason}")
    judged = [f for f in result["figures"] if f["passed"] is not None]
    passed = sum(1 for f in judged if f["passed"])
    console.print(f"{passed} of {len(judged)} metis-core targets met; run took {result['duration_s']:.0f} s")


def write_json(result: dict[str, Any], directory: Path = RESULTS_DIR) -> Path:
    """Keep this run as <timestamp>.json; a non-quick run also updates latest.json.

    A subset run (--only) replaces only the cases it ran in latest.json, so the page generated
    from it always shows every case; quick (smoke) runs go to quick.json.tmp only.
    """
    directory.mkdir(parents=True, exist_ok=True)
    if result["quick"]:  # smoke runs are kept out of git (*.tmp is ignored) and out of latest.json
        path = directory / "quick.json.tmp"
        path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        return path
    stamp = result["timestamp"].replace(":", "").replace("-", "")
    path = directory / f"{stamp}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    latest = directory / "latest.json"
    merged = dict(result)
    if latest.exists() and result["only"]:
        previous = json.loads(latest.read_text())
        ran = set(result["cases"])
        merged["figures"] = [f for f in previous["figures"] if f["case"] not in ran] + result["figures"]
        merged["cases"] = sorted(set(previous.get("cases", [])) | ran)
    latest.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    return path


def keep_named(name: str, result: dict[str, Any], save: bool = True) -> None:
    """A standalone bench's result: printed, and kept as results/NAME-<UTC stamp>.json unless not `save`."""
    text = json.dumps(result, indent=2)
    print(text)
    if save:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        (RESULTS_DIR / f"{name}-{stamp}.json").write_text(text + "\n", encoding="utf-8")
