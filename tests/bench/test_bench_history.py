"""Runs of the same metis-core code are read side by side; other code, edited trees and smoke runs never mix in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from bench import environment, history, performance_doc, report  # noqa: E402
from bench.figures import FLOOR, METIS, Figure, Target, with_floor  # noqa: E402

CALL = "non-streaming call · openai · sync"
COST = "cost of one response · claude-sonnet-4-5"
TREE = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


def _figures(call_us: float, cost_us: float) -> list[dict[str, Any]]:
    calls = with_floor([Figure("call", CALL, FLOOR, 500.0, "µs", 200),
                        Figure("call", CALL, METIS, call_us, "µs", 200)], Target("ratio_max", 1.5))
    cost = Figure("cost", COST, METIS, cost_us, "µs", 7, target=Target("max", 10.0))
    return [figure.to_json() for figure in [*calls, cost]]


def _run(stamp: str, call_us: float, *, tree: str | None = TREE, modified: bool | None = False,
         quick: bool = False) -> dict[str, Any]:
    return {
        "timestamp": stamp, "quick": quick, "only": False, "cases": ["call", "cost"], "duration_s": 400.0,
        "machine": {"python": "3.11.7", "platform": "Linux", "cpus": 2}, "versions": {"python": "3.11.7"},
        "code": {"metis_core_tree": tree, "modified": modified}, "missing": {}, "failures": [],
        "figures": _figures(call_us, 2.0),
    }


def _keep(directory: Path, run: dict[str, Any]) -> None:
    if run["quick"]:
        (directory / "quick.json.tmp").write_text(json.dumps(run))
        return
    (directory / f"{run['timestamp'].replace(':', '').replace('-', '')}.json").write_text(json.dumps(run))


@pytest.fixture
def results(tmp_path: Path) -> Path:
    for run in [
        _run("2026-11-22T07:00:00Z", 650.0),  # 1.30x
        _run("2026-11-22T07:10:00Z", 800.0),  # 1.60x: a miss
        _run("2026-11-22T07:20:00Z", 2000.0, tree="0" * 40),  # other code
        _run("2026-11-22T07:30:00Z", 2000.0, modified=True),  # this tree with uncommitted edits
        _run("2026-11-22T07:40:00Z", 2000.0, quick=True),  # a smoke run
        _run("2026-11-22T07:50:00Z", 700.0),  # 1.40x
    ]:
        _keep(tmp_path, run)
    latest = json.loads((tmp_path / "20261122T075000Z.json").read_text())
    (tmp_path / "latest.json").write_text(json.dumps(latest))
    return tmp_path


def test_only_kept_runs_of_the_same_unedited_tree_are_read(results: Path) -> None:
    latest = json.loads((results / "latest.json").read_text())
    runs = history.same_code_runs(latest, results)
    assert [run["timestamp"] for run in runs] == [
        "2026-11-22T07:00:00Z", "2026-11-22T07:10:00Z", "2026-11-22T07:50:00Z"
    ]


def test_each_judged_row_keeps_its_runs_figures_and_verdicts_in_time_order(results: Path) -> None:
    runs = history.same_code_runs(json.loads((results / "latest.json").read_text()), results)
    rows = {row.row: row for row in history.judged_rows(runs)}
    assert set(rows) == {CALL, COST}  # the floor is never judged
    call = rows[CALL]
    assert [round(figure, 2) for _, figure, _ in call.runs] == [1.3, 1.6, 1.4]
    assert [passed for _, _, passed in call.runs] == [True, False, True]
    assert round(call.median, 2) == 1.4 and call.met == 2
    assert rows[COST].judged_on_ratio is False and rows[COST].median == 2.0 and rows[COST].met == 3


def test_the_page_sets_a_row_that_missed_once_beside_its_other_runs(results: Path, tmp_path: Path) -> None:
    page = performance_doc.write(results / "latest.json", tmp_path / "performance.md").read_text()
    section = page.split("## Run to run", 1)[1]
    assert "The last 3 runs of this metis-core code (git tree `a1b2c3d4e5`" in section
    assert "Rows that met their target in every one of these runs: 1 of 2." in section
    assert "| 11-22 07:00 | 11-22 07:10 | 11-22 07:50 | median | met |" in section
    assert f"| {CALL} | <= 1.5x floor | 1.30x | **1.60x** | 1.40x | 1.40x | 2 of 3 |" in section
    assert COST not in section  # met in every run: counted, not listed


def test_a_single_run_or_a_run_of_edited_code_gets_no_run_to_run_section(tmp_path: Path) -> None:
    only = _run("2026-11-22T08:00:00Z", 800.0)
    report.write_json(only, tmp_path)
    assert "## Run to run" not in performance_doc.write(tmp_path / "latest.json", tmp_path / "p.md").read_text()
    edited = _run("2026-11-22T08:10:00Z", 800.0, modified=True)
    report.write_json(edited, tmp_path)
    assert history.same_code_runs(edited, tmp_path) == []
    assert "## Run to run" not in performance_doc.write(tmp_path / "latest.json", tmp_path / "p.md").read_text()


def test_a_run_records_the_metis_core_tree_it_measured() -> None:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD:metis_core"], cwd=REPO_ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    code = environment.code_identity()
    assert code["metis_core_tree"] == head
    assert isinstance(code["modified"], bool)
