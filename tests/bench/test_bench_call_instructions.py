"""The call-instructions report: per-call totals read from callgrind's output, ratios to the floor."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from bench.call_instructions import report  # noqa: E402
from bench.callgrind import totals_per_call  # noqa: E402
from bench.figures import FLOOR  # noqa: E402


def test_totals_are_read_from_the_totals_line_and_divided_by_the_counted_calls() -> None:
    out = "version: 1\ncmd: python\nevents: Ir\nsummary: 999\ntotals: 352000000\n"
    assert totals_per_call(out, 200) == 1_760_000


def test_the_report_sums_the_stages_and_says_how_far_metis_is_from_its_budget() -> None:
    counts = {FLOOR: 1_000_000.0, "metis-core": 1_400_000.0, "survey": 100_000.0, "send": 900_000.0}
    lines = report(counts, FLOOR)
    assert any(line.startswith("metis-core") and line.endswith("1.40x") for line in lines)
    assert any(line.startswith("stages, summed") and "1,000,000" in line for line in lines)
    assert lines[-1] == "metis-core is 150,000 over 1.25x the floor's instructions"


def test_an_async_reports_stages_sum_with_the_aiohttp_exchange_in_place_of_the_sync_one() -> None:
    from bench.figures import AIOHTTP_FLOOR

    counts = {AIOHTTP_FLOOR: 500_000.0, "metis-core": 1_700_000.0, "to_wire": 1_200_000.0, "asend": 480_000.0}
    lines = report(counts, AIOHTTP_FLOOR)
    assert any(line.startswith("stages, summed") and "1,680,000" in line for line in lines)
    assert lines[-1] == "metis-core is 1,075,000 over 1.25x the floor's instructions"


def test_the_hand_written_mapping_is_a_reference_row_kept_out_of_the_stages_sum() -> None:
    counts = {FLOOR: 1_000_000.0, "metis-core": 1_400_000.0, "to_wire": 300_000.0, "handwritten": 250_000.0}
    lines = report(counts, FLOOR)
    assert any(line.startswith("stages, summed") and "300,000" in line for line in lines)
    assert "floor + hand-written mapping 1,250,000 (1.25x): a per-call mapping's least" in lines


def test_an_async_report_sets_asend_beside_the_floors_own_exchange_and_shows_the_work_outside_the_stages() -> None:
    from bench.call_instructions import EXCHANGE
    from bench.figures import AIOHTTP_FLOOR

    counts = {AIOHTTP_FLOOR: 500_000.0, "metis-core": 1_100_000.0, "to_wire": 550_000.0, "asend": 480_000.0,
              EXCHANGE: 460_000.0}
    lines = report(counts, AIOHTTP_FLOOR)
    assert any(line.startswith("stages, summed") and "1,030,000" in line for line in lines)
    assert "metis-core outside its stages 70,000 (0.14x): orchestration, preparation" in lines
    assert "asend is 20,000 (1.04x) beside the floor's own exchange" in lines
