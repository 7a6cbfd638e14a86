"""The held test: a fall on the families of turns a model holds, pooled over their fingerprints,
found even where each fingerprint holds too few scores to be tested alone. Synthetic scores, no
database."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from metis_core.learning.patterns.advisor import PatternAdvisor
from metis_core.learning.patterns.evidence import model_regime_start, regime_began, regime_start
from metis_core.learning.patterns.fingerprint import Fingerprint
from metis_core.learning.patterns.store import Outcome, StoredFingerprint
from metis_core.learning.settings import PatternSettings

OK, BAD = 0.95, 0.05
CHEAP, STRONG = "p:cheap", "p:strong"


@pytest.fixture(autouse=True)
def learning_backend() -> str:
    """No database here: this replaces the conftest's two-backend parametrization."""
    return "none"


def thin(family: str, fingerprints: int, scores: list[float]) -> list[tuple[str, str, float]]:
    """`scores` dealt round the fingerprints of one family, oldest first."""
    return [(f"{family}{i % fingerprints}", family, score) for i, score in enumerate(scores)]


def by_fingerprint(stream: list[tuple[str, str, float]]) -> list[tuple[str, float]]:
    return [(fp, score) for fp, _, score in stream]


def test_a_drop_spread_thinly_over_a_held_family_is_found_where_it_began() -> None:
    s = PatternSettings()
    history = thin("write", 6, [OK] * 24)  # four successes on each of six kinds: none testable alone
    drop = [(f"write{i}", "write", BAD) for i in range(3)]  # one failure on each of three of them
    assert regime_start(by_fingerprint(history + drop), s) == 0
    assert model_regime_start(history + drop, s) == 24
    assert model_regime_start(history + drop[:2], s) == 0  # two failures after a clean record may be bad luck


def test_the_held_test_looks_for_falls_only() -> None:
    s = PatternSettings(change_margin=0.2)  # room for a 75 % family to rise by the margin
    rising = thin("plan", 6, [BAD if i % 4 == 3 else OK for i in range(40)] + [OK] * 30)
    by_family = [(family, score) for _, family, score in rising]
    assert regime_start(by_family, s) == 40  # tested both ways on its family, the rise would count
    assert regime_start(by_family, s, held_falls_only=True) == 0 and model_regime_start(rising, s) == 0


def test_a_family_below_success_floor_is_not_held_so_its_failures_are_not_tested() -> None:
    fixed = {"change_failure_scale": 0.0}  # so a short run shows the floor alone decides
    three_in_four = thin("debug", 6, [BAD if i % 4 == 3 else OK for i in range(40)])
    failing = three_in_four + thin("debug", 6, [BAD] * 5)
    assert model_regime_start(failing, PatternSettings(**fixed)) == 39  # held at 0.7: the fall is found
    assert model_regime_start(failing, PatternSettings(**fixed, success_floor=0.8)) == 0


def test_failures_on_a_family_with_too_few_scores_do_not_add_to_a_fall() -> None:
    s = PatternSettings()
    history = thin("write", 6, [OK] * 24)
    tried = [("stem0", "stem", BAD), ("write0", "write", BAD), ("stem1", "stem", BAD), ("write1", "write", BAD)]
    assert model_regime_start(history + tried, s) == 0  # the tries on stem (no baseline) are not tested
    assert model_regime_start([*history, ("write2", "write", BAD), *tried], s) == 24


def test_a_steady_record_with_its_usual_failures_raises_no_alarm() -> None:
    s = PatternSettings()
    draw = random.Random(11)
    steady = []  # 26 kinds in 8 families: half right 95 % of the time, the rest 55 %
    for _ in range(200):
        fp = draw.randrange(26)
        rate = 0.95 if fp % 8 < 4 else 0.55
        steady.append((f"fp{fp}", f"family{fp % 8}", OK if draw.random() < rate else BAD))
    assert model_regime_start(steady, s) == 0
    one_in_ten = thin("write", 6, [BAD if i % 10 == 9 else OK for i in range(200)])
    assert model_regime_start(one_in_ten, s) == 0


def test_regime_began_groups_fingerprints_by_the_family_it_is_given() -> None:
    scores = [OK] * 24 + [BAD] * 3
    newest_first = [Outcome(f"write{i % 6}", CHEAP, x, Decimal("0.002"), 10, 1_000 + i)
                    for i, x in enumerate(scores)][::-1]
    assert regime_began(newest_first, PatternSettings()) is None  # each fingerprint its own family
    regime = regime_began(newest_first, PatternSettings(), {f"write{i}": "write" for i in range(6)})
    assert regime is not None and regime.began_us == 1_024 and regime.outcomes == 3


class Store:
    """The reads the advisor makes: six stored fingerprints that lead with "write"."""

    def __init__(self, rows: list[Outcome]) -> None:
        self.rows = rows
        self.reads = 0

    def fingerprints(self) -> list[StoredFingerprint]:
        self.reads += 1
        return [StoredFingerprint(f"write{i}", Fingerprint({"lead": "write", "size": str(i)}), 0, 0) for i in range(6)]

    def latest_outcomes(self, model: str, limit: int) -> list[Outcome]:
        return [o for o in reversed(self.rows) if o.model == model][:limit]


def test_the_advisor_drops_a_models_evidence_from_before_a_fall_on_its_held_family() -> None:
    rows = [Outcome(f"write{i % 6}", CHEAP, x, Decimal("0.002"), 10, 1_000 + i)
            for i, x in enumerate([OK] * 24 + [BAD] * 3)]
    store = Store(rows)
    advisor = PatternAdvisor(store, PatternSettings())  # type: ignore[arg-type]
    here = [o for o in rows if o.fingerprint_id == "write0"]  # the turn's own kind: 4 successes, 1 failure
    evidence = advisor.tally(here, {"write0": 0.0}, now_us=2_000)[CHEAP]
    assert evidence.count == 1 and evidence.mean < 0.2  # only the failure since the fall, and the regime's mean
    advisor.tally(here, {"write0": 0.0}, now_us=2_000)
    assert store.reads == 1  # the families are read once, while no new fingerprint appears
