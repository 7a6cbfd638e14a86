"""The figures' arithmetic: round-by-round ratio spreads and how ratios are written.

A spread says how far the machine moved a ratio during one run, so readers can tell a verdict at
the edge of its bound from a clear one; it must pair each round with the floor's same round.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:  # `bench` is a top-level folder of the repository, not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from bench.cases import calls  # noqa: E402
from bench.context import RunContext  # noqa: E402
from bench.figures import AIOHTTP_FLOOR, FLOOR, METIS, Figure, Target, paired_spread  # noqa: E402
from bench.report import format_ratio  # noqa: E402


def _rounds(medians: list[float], per_round: int) -> list[float]:
    return [value for median in medians for value in [median] * per_round]


def test_each_round_is_compared_with_the_floors_same_round() -> None:
    floor = _rounds([1.0, 2.0, 1.0, 4.0], 3)  # the machine slowed down in rounds 2 and 4
    ours = _rounds([1.0, 2.4, 1.4, 8.0], 3)
    low, high = paired_spread(ours, floor, per_round=3) or (0, 0)
    # per-round ratios 1.0, 1.2, 1.4, 2.0 -> quartiles 1.15 and 1.55
    assert (round(low, 4), round(high, 4)) == (1.15, 1.55)


def test_a_spike_inside_a_round_does_not_move_that_rounds_ratio() -> None:
    floor = _rounds([1.0] * 4, 5)
    ours = _rounds([1.3] * 4, 5)
    ours[2] = 50.0  # one call caught a stall
    assert paired_spread(ours, floor, per_round=5) == pytest.approx((1.3, 1.3))


def test_too_few_full_rounds_give_no_spread_and_a_partial_round_is_left_out() -> None:
    assert paired_spread([1.0] * 9, [1.0] * 9, per_round=3) is None
    floor = [*_rounds([1.0] * 4, 2), 1.0]
    ours = [*_rounds([2.0] * 4, 2), 100.0]  # a fifth round cut short by the time budget
    assert paired_spread(ours, floor, per_round=2) == pytest.approx((2.0, 2.0))


def test_call_figures_carry_a_spread_for_everyone_but_the_floor() -> None:
    ctx = RunContext(server="http://127.0.0.1:1")
    block = ctx.sizes.block
    samples = {FLOOR: _rounds([0.001] * 5, block), METIS: _rounds([0.0012, 0.0013, 0.0014, 0.0015, 0.0016], block)}
    figures = {f.impl: f for f in calls._figures(ctx, "non-streaming call · test · sync", samples)}
    assert figures[FLOOR].spread is None
    assert figures[METIS].spread == pytest.approx((1.3, 1.5))
    assert figures[METIS].to_json()["spread"] == pytest.approx([1.3, 1.5])


def test_async_call_rows_are_judged_against_the_aiohttp_floor() -> None:
    ctx = RunContext(server="http://127.0.0.1:1")
    block = ctx.sizes.block
    samples = {FLOOR: _rounds([0.002] * 5, block), AIOHTTP_FLOOR: _rounds([0.001] * 5, block),
               METIS: _rounds([0.0012] * 5, block)}
    figures = {f.impl: f for f in calls._figures(ctx, "non-streaming call · test · async", samples, AIOHTTP_FLOOR)}
    assert figures[AIOHTTP_FLOOR].is_floor and not figures[FLOOR].is_floor
    assert figures[METIS].ratio == pytest.approx(1.2)
    assert figures[FLOOR].ratio == pytest.approx(2.0)
    assert figures[METIS].passed is True  # 1.2x is within the 1.25x bound


def test_ratios_are_written_with_their_spread_when_there_is_one() -> None:
    assert format_ratio(None) == "—"
    assert format_ratio(1.4449) == "1.44x"
    assert format_ratio(1.4449, [1.381, 1.52]) == "1.44x (1.38–1.52)"


def test_an_over_the_floor_target_is_met_by_the_difference_not_the_ratio() -> None:
    target = Target("over_max", 10.0)
    assert target.describe("ms") == "<= floor + 10 ms"
    near = Figure("startup", "first call", METIS, 64.0, "ms", 15, floor=55.0, target=target)
    far = Figure("startup", "first call", METIS, 65.5, "ms", 15, floor=55.0, target=target)
    unknown = Figure("startup", "first call", METIS, 1.0, "ms", 15, target=target)
    assert (near.passed, far.passed, unknown.passed) == (True, False, None)


def test_every_case_of_the_suite_has_its_meaning_in_the_generated_doc() -> None:
    from bench import performance_doc
    from bench.runner import CASES

    assert set(performance_doc.CASE_ORDER) == set(performance_doc.MEANINGS) == set(CASES)


def test_cold_import_is_judged_against_the_pydantic_reference_line_of_the_same_run() -> None:
    from bench.cases.startup import IMPORT_TARGET, PYDANTIC_REFERENCE
    from bench.figures import with_floor, with_reference

    def judged(ours: float) -> Figure:
        row = "cold import of what a call needs"
        figures = [Figure("startup", row, FLOOR, 380.0, "ms", 11),
                   Figure("startup", row, PYDANTIC_REFERENCE, 815.0, "ms", 11),
                   Figure("startup", row, METIS, ours, "ms", 11)]
        return with_reference(with_floor(figures, IMPORT_TARGET), PYDANTIC_REFERENCE)[-1]

    assert judged(789.0).passed is True  # under the reference line, though over 2x the floor
    assert judged(830.0).passed is False  # under 2.2x the floor, but over the reference line
    assert judged(830.0).to_json()["target"] == f"<= {PYDANTIC_REFERENCE}"
