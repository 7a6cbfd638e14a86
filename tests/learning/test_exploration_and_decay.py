"""Exploration (Thompson sampling within a budget) and evidence decay, on the advisor alone:
a store of synthetic outcomes, seeded draws, no runtime."""

from __future__ import annotations

import random
import time
from decimal import Decimal

import pytest

from metis_core.learning.patterns.advisor import PatternAdvisor
from metis_core.learning.patterns.evidence import US_PER_DAY, changed, decay, tally
from metis_core.learning.patterns.exploration import Explorer
from metis_core.learning.patterns.fingerprint import Fingerprint
from metis_core.learning.patterns.store import Outcome, StoredFingerprint
from metis_core.learning.settings import ExplorationSettings, PatternSettings
from metis_core.routing.engine import TurnNeeds

STRONG, CHEAP, MID = "p:strong", "p:cheap", "p:mid"
NOW = time.time_ns() // 1000
COSTS = {STRONG: Decimal("0.010"), CHEAP: Decimal("0.002"), MID: Decimal("0.005")}


@pytest.fixture(autouse=True)
def learning_backend() -> str:
    """No database here: this replaces the conftest's two-backend parametrization."""
    return "none"


class Store:
    """The two reads the advisor makes, over a list of outcomes of one fingerprint."""

    def __init__(self) -> None:
        self.rows: list[Outcome] = []
        self.fp = StoredFingerprint("fp1", Fingerprint({"lead": "summarize"}), 0, 0)

    def add(self, model: str, score: float, count: int = 1, at: int | None = None) -> None:
        for _ in range(count):
            stamp = at if at is not None else NOW - 1000 + len(self.rows)
            self.rows.append(Outcome("fp1", model, score, COSTS[model], 10, stamp))

    def neighbors(self, fp: Fingerprint, k: int, max_distance: float) -> list[tuple[StoredFingerprint, float]]:
        return [(self.fp, 0.0)]

    def outcomes(self, ids: list[str]) -> list[Outcome]:
        return list(self.rows)


def advisor(store: Store, settings: PatternSettings | None = None, explore: ExplorationSettings | None = None,
            ratio: float | None = 0.2) -> PatternAdvisor:
    explorer = Explorer(explore, lambda model, ref: ratio, random.Random(7)) if explore else None
    return PatternAdvisor(store, settings or PatternSettings(), explorer=explorer)  # type: ignore[arg-type]


def pick(a: PatternAdvisor, explore: bool = True) -> str | None:
    rec = a.recommend(TurnNeeds(user_text="Summarize the notes"), explore=explore)
    return rec.model if rec is not None else None


def test_decay_halves_per_half_life_of_newer_outcomes_and_of_days() -> None:
    s = PatternSettings(half_life_outcomes=10, half_life_days=30)
    assert decay(0, 0, s) == 1.0
    assert decay(10, 0, s) == pytest.approx(0.5) and decay(0, 30 * US_PER_DAY, s) == pytest.approx(0.5)
    assert decay(20, 30 * US_PER_DAY, s) == pytest.approx(0.125)
    assert decay(50, 10**15, PatternSettings(half_life_outcomes=0, half_life_days=0)) == 1.0


def test_posterior_counts_are_the_decayed_successes() -> None:
    rows = [Outcome("fp1", CHEAP, 1.0, Decimal("0.001"), 1, NOW - i) for i in range(10)]
    (ev,) = tally(rows, {"fp1": 0.0}, PatternSettings(half_life_outcomes=0, half_life_days=0), NOW).values()
    assert (ev.alpha, ev.beta, ev.evidence, ev.count) == (11.0, 1.0, 10.0, 10)
    (decayed,) = tally(rows, {"fp1": 0.0}, PatternSettings(half_life_outcomes=10), NOW).values()
    assert 7.0 < decayed.evidence < 7.5 and decayed.interval()[0] > 0.7


def turns_until_strong(settings: PatternSettings) -> int:
    store = Store()
    store.add(STRONG, 0.95, 20)
    store.add(CHEAP, 0.95, 200)  # a long good record
    a = advisor(store, settings)
    assert pick(a) == CHEAP
    for turn in range(1, 100):
        store.add(CHEAP, 0.05)  # the cheap model got worse: the turns routed to it fail
        if pick(a) == STRONG:
            return turn
    return 100


OFF = {"half_life_outcomes": 0, "half_life_days": 0, "change_window": 0}


def test_a_model_whose_success_drops_loses_its_routes_within_a_few_turns() -> None:
    assert turns_until_strong(PatternSettings(**OFF)) > 4  # a long good record outweighs a few failures
    assert turns_until_strong(PatternSettings(**{**OFF, "half_life_outcomes": 10})) <= 4  # decay alone
    assert turns_until_strong(PatternSettings()) <= 4


def turns_until_cheap(settings: PatternSettings) -> int:
    store = Store()
    store.add(STRONG, 0.95, 20)
    store.add(CHEAP, 0.05, 10)
    a = advisor(store, settings)
    assert pick(a) == STRONG
    for turn in range(1, 100):
        store.add(CHEAP, 0.95)  # e.g. explored or learned turns on its new version
        if pick(a) == CHEAP:
            return turn
    return 100


def test_a_model_that_improves_wins_its_routes_back() -> None:
    assert turns_until_cheap(PatternSettings(**OFF)) == 100
    assert turns_until_cheap(PatternSettings(**{**OFF, "half_life_outcomes": 10})) <= 20  # two half-lives
    assert turns_until_cheap(PatternSettings()) <= 7  # the change point: its last six scores alone count


def test_a_change_point_needs_the_recent_scores_to_differ_by_more_than_the_margin() -> None:
    def rows(scores: list[float]) -> list[Outcome]:  # newest first
        return [Outcome("fp1", CHEAP, x, Decimal(0), 0, NOW - i) for i, x in enumerate(scores)]

    s = PatternSettings()
    assert changed(rows([0.05] * 4 + [0.95] * 2 + [0.95] * 20), s)
    assert changed(rows([0.95] * 6 + [0.05] * 10), s)
    assert not changed(rows([0.95, 0.05, 0.95, 0.95, 0.05, 0.95] + [0.95] * 20), s)  # two failures in six
    assert not changed(rows([0.05] * 6), s) and not changed(rows([0.05] * 7 + [0.95]), PatternSettings(**OFF))


def test_exploration_tries_a_cheaper_model_with_no_evidence_and_says_why() -> None:
    store = Store()
    store.add(STRONG, 0.95, 20)
    a = advisor(store, explore=ExplorationSettings(share=0.5, usd_per_day=Decimal(1), candidates=[CHEAP]))
    recs = [a.recommend(TurnNeeds(user_text="Summarize"), explore=True) for _ in range(30)]
    explored = [r for r in recs if r is not None and r.exploration is not None]
    assert explored and {r.model for r in explored} == {CHEAP}
    assert all(r is not None and r.model == STRONG for r in recs if r not in explored)
    rec = explored[0]
    assert rec.exploration is not None
    assert rec.exploration.reference_model == STRONG and rec.exploration.evidence == 0.0
    assert rec.exploration.draw + 0.05 >= rec.exploration.reference_draw


def test_exploration_never_happens_when_the_slot_cannot_choose() -> None:
    store = Store()
    store.add(STRONG, 0.95, 20)
    a = advisor(store, explore=ExplorationSettings(share=1.0, usd_per_day=Decimal(1), candidates=[CHEAP]))
    assert [pick(a, explore=False) for _ in range(30)] == [STRONG] * 30
    assert a.explorer is not None and a.explorer.explored == 0
    assert CHEAP in [pick(a) for _ in range(30)]


def test_exploration_stays_within_its_share_of_turns_and_its_daily_spend() -> None:
    store = Store()
    store.add(STRONG, 0.95, 20)
    settings = ExplorationSettings(share=0.1, usd_per_day=Decimal(1), candidates=[CHEAP], until_evidence=1000)
    a = advisor(store, explore=settings)
    picks = [pick(a) for _ in range(100)]
    assert 1 <= picks.count(CHEAP) <= 1 + 0.1 * 100
    # a day's spend of two explored turns (0.002 each): the third is refused
    tight = advisor(store, explore=ExplorationSettings(share=1.0, usd_per_day=Decimal("0.005"), candidates=[CHEAP],
                                                       until_evidence=1000))
    assert [pick(tight) for _ in range(30)].count(CHEAP) == 2


def test_exploration_leaves_alone_models_with_enough_evidence_dearer_ones_and_unpriced_ones() -> None:
    store = Store()
    store.add(STRONG, 0.95, 20)
    store.add(CHEAP, 0.2, 20)
    on = ExplorationSettings(share=1.0, usd_per_day=Decimal(1))
    assert [pick(advisor(store, explore=on)) for _ in range(10)] == [STRONG] * 10  # cheap: enough evidence, bad
    only_strong = Store()
    only_strong.add(STRONG, 0.95, 20)
    dearer = ExplorationSettings(share=1.0, usd_per_day=Decimal(1), candidates=[MID])
    assert pick(advisor(only_strong, explore=dearer, ratio=2.0)) == STRONG
    assert pick(advisor(only_strong, explore=dearer, ratio=None)) == STRONG


def test_seeded_exploration_is_reproducible() -> None:
    def run() -> list[str | None]:
        store = Store()
        store.add(STRONG, 0.9, 6)
        store.add(CHEAP, 0.8, 3)
        a = advisor(store, explore=ExplorationSettings(share=0.3, usd_per_day=Decimal(1), candidates=[MID]))
        return [pick(a) for _ in range(40)]

    first = run()
    assert first == run() and len(set(first)) > 1
