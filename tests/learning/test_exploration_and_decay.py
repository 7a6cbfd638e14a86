"""Exploration (Thompson sampling within a budget) and evidence decay, on the advisor alone:
a store of synthetic outcomes, seeded draws, no runtime."""

from __future__ import annotations

import random
import time
from decimal import Decimal
from types import SimpleNamespace

import pytest

from metis_core.learning.patterns.advisor import PatternAdvisor
from metis_core.learning.patterns.evidence import US_PER_DAY, Regime, decay, regime_began, regime_start, tally
from metis_core.learning.patterns.exploration import Explorer
from metis_core.learning.patterns.fingerprint import Fingerprint
from metis_core.learning.patterns.store import Outcome, StoredFingerprint
from metis_core.learning.replay_learning import PlannedReplay, ReplayLearner
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
    """The reads the advisor makes, over a list of outcomes of one fingerprint."""

    def __init__(self) -> None:
        self.rows: list[Outcome] = []
        self.fp = StoredFingerprint("fp1", Fingerprint({"lead": "summarize"}), 0, 0)

    def add(self, model: str, score: float, count: int = 1, at: int | None = None, source: str = "observed") -> None:
        for _ in range(count):
            stamp = at if at is not None else NOW - 1000 + len(self.rows)
            self.rows.append(Outcome("fp1", model, score, COSTS[model], 10, stamp, source))

    def neighbors(self, fp: Fingerprint, k: int, max_distance: float) -> list[tuple[StoredFingerprint, float]]:
        return [(self.fp, 0.0)]

    def fingerprints(self) -> list[StoredFingerprint]:
        return [self.fp]

    def outcomes(self, ids: list[str]) -> list[Outcome]:
        return list(self.rows)

    def latest_outcomes(self, model: str, limit: int) -> list[Outcome]:
        return [o for o in reversed(self.rows) if o.model == model][:limit]


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


OFF = {"half_life_outcomes": 0, "half_life_days": 0, "change_threshold": 0, "hold_confidence": 0}


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


def test_a_drop_or_a_rise_is_found_where_it_began_and_noise_is_not_a_change() -> None:
    s = PatternSettings()
    good = [("a", 0.95)] * 30
    assert regime_start(good + [("a", 0.05)] * 3, s) == 30  # three failures after a clean record
    assert regime_start(good + [("a", 0.05)] * 2, s) == 0  # two may be bad luck: not yet
    noisy = [("a", 0.05 if i % 10 == 9 else 0.95) for i in range(200)]  # one failure in ten, steadily
    assert regime_start(noisy, s) == 0
    assert regime_start([("a", 0.05)] * 10 + [("a", 0.95)] * 6, s) == 10  # a model that improves
    assert regime_start(good + [("a", 0.05)] * 5, PatternSettings(change_threshold=0)) == 0


def test_each_score_is_weighed_against_its_own_kind_so_a_model_wide_drop_adds_up_across_kinds() -> None:
    s = PatternSettings()
    history = [("easy", 0.95), ("hard", 0.05)] * 15  # a hard kind it fails on is no change
    assert regime_start(history, s) == 0
    dropped = [*history, ("easy", 0.05), ("easy2", 0.95), ("easy", 0.05)]  # two failures: not yet
    assert regime_start(dropped, s) == 0
    assert regime_start(history + [("easy", 0.05)] * 3, s) == 30


def rows_of(model: str, scores: list[float], fp: str = "fp1", start: int = 0) -> list[Outcome]:
    return [Outcome(fp, model, x, COSTS[model], 10, NOW - 10_000 + start + i) for i, x in enumerate(scores)]


def test_after_a_model_wide_drop_a_few_lucky_turns_on_one_kind_do_not_win_its_route_back() -> None:
    before = rows_of(CHEAP, [0.95] * 20, "other") + rows_of(CHEAP, [0.05] * 6, "other", 20)
    regime = regime_began(list(reversed(before)), PatternSettings())
    assert isinstance(regime, Regime) and regime.began_us == before[20].recorded_at_us and regime.mean < 0.1
    lucky = rows_of(CHEAP, [0.95] * 3, "fp1", 30) + rows_of(STRONG, [0.95] * 20, "fp1", 40)
    alone = tally(lucky, {"fp1": 0.0}, PatternSettings(), NOW)
    pooled = tally(lucky, {"fp1": 0.0}, PatternSettings(), NOW, {CHEAP: regime})
    assert alone[CHEAP].mean == pytest.approx(0.95) and pooled[CHEAP].mean < 0.7
    a = advisor(Store(), PatternSettings(switch_evidence=0))  # the regime's part alone
    assert a.choose(alone) is not None and a.choose(alone).model == CHEAP  # type: ignore[union-attr]
    assert a.choose(pooled) is not None and a.choose(pooled).model == STRONG  # type: ignore[union-attr]


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


def test_exploration_draws_on_what_users_rated_not_on_the_verdicts_learning_recorded() -> None:
    def explored(source: str) -> int:
        store = Store()
        store.add(STRONG, 0.95, 20)
        store.add(CHEAP, 0.95, 3, source=source)
        store.add(CHEAP, 0.1, 2, source=source)  # a judge that errs now and then, or real failures
        store.add(CHEAP, 0.95, 2)  # two explored turns the users rated good
        a = advisor(store, explore=ExplorationSettings(share=1.0, usd_per_day=Decimal(10), candidates=[CHEAP]))
        assert [pick(a) for _ in range(200)].count(CHEAP) == a.explorer.explored  # type: ignore[union-attr]
        return a.explorer.explored  # type: ignore[union-attr]

    # the same record, once as learned verdicts beside two users' ratings, once as users' ratings alone
    assert explored("learned") > 1.5 * explored("observed")


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


def test_learning_gives_a_kind_up_only_once_its_posterior_is_decided() -> None:
    """Two judged failures give a candidate up; one success and one failure (a judge that errs now and
    then) does not: a kind given up is rarely explored again."""
    def settled(scores: list[float]) -> bool:
        store = Store()
        store.add(STRONG, 0.95, 40)
        store.rows += [Outcome("fp1", CHEAP, x, COSTS[CHEAP], 10, NOW - 100 + i, "learned")
                       for i, x in enumerate(scores)]
        loop = SimpleNamespace(runtime=None, settings=SimpleNamespace(patterns=PatternSettings()), patterns=store,
                               advisor=advisor(store))
        planned = PlannedReplay("s1", 1, "t1", "fp1", STRONG, CHEAP, Decimal("0.001"))
        return ReplayLearner(loop)._settled(planned)  # type: ignore[arg-type]

    assert settled([0.1, 0.1])
    assert not settled([0.95, 0.1])
    assert not settled([0.1])  # one failure may be noise



def test_a_kind_that_fails_now_and_then_needs_a_longer_run_of_failures_to_count_as_a_drop() -> None:
    s = PatternSettings()
    ninety = [("a", 0.05 if i % 10 == 9 else 0.95) for i in range(39)]  # one failure in ten
    assert regime_start(ninety + [("a", 0.05)] * 4, s) == 0  # four in a row: bad luck at 90 %, not yet a drop
    assert regime_start(ninety + [("a", 0.05)] * 4, PatternSettings(change_failure_scale=0)) == 39
    assert regime_start(ninety + [("a", 0.05)] * 5, s) == 39
    assert regime_start([("a", 0.95)] * 30 + [("a", 0.05)] * 3, s) == 30  # a clean record: three still are


def test_a_kind_near_the_top_cannot_rise_by_the_margin_so_a_lucky_run_is_no_change() -> None:
    draw = random.Random(43)  # a steady 90 % record whose run of luck once read as a rise (at outcome 86)
    ninety = [("a", 0.95 if draw.random() < 0.9 else 0.05) for _ in range(160)]
    assert regime_start(ninety, PatternSettings()) == 0
    half = [("a", 0.05 if i % 2 else 0.95) for i in range(20)]
    assert regime_start(half + [("a", 0.95)] * 12, PatternSettings()) == 20  # a 50 % kind can still improve


def test_a_model_that_trails_takes_no_route_on_fewer_outcomes_than_a_switch_needs() -> None:
    store = Store()
    store.add(STRONG, 0.95, 20)
    store.add(CHEAP, 0.95, 3)  # three lucky turns: 2.8 outcomes of evidence after decay
    assert pick(advisor(store)) == STRONG
    assert pick(advisor(store, PatternSettings(switch_evidence=0))) == CHEAP
    store.add(CHEAP, 0.95)
    assert pick(advisor(store)) == CHEAP


def test_kinds_too_new_to_test_do_not_move_where_a_drop_under_way_began() -> None:
    history = [("a", 0.95), ("b", 0.95)] * 10
    drop = [("a", 0.05), ("c", 0.95), ("b", 0.05), ("d", 0.95), ("a", 0.05), ("e", 0.95), ("b", 0.05)]
    assert regime_start(history + drop, PatternSettings()) == 20  # c, d, e have no baseline of their own


def test_exploration_stops_once_a_model_holds_what_its_latest_until_evidence_outcomes_carry() -> None:
    """At a half-life of 10 outcomes no model holds 20 of evidence (at most 14.9): the cap counts
    outcomes, decayed like the tallies, so `until_evidence: 20` is reached after 20 outcomes."""
    store = Store()
    store.add(STRONG, 0.95, 20)
    store.add(CHEAP, 0.8, 30)  # trails by more than the tolerance, close enough to be drawn now and then
    capped = ExplorationSettings(share=1.0, usd_per_day=Decimal(1), until_evidence=20)
    assert [pick(advisor(store, explore=capped)) for _ in range(40)] == [STRONG] * 40
    uncapped = ExplorationSettings(share=1.0, usd_per_day=Decimal(1))
    assert CHEAP in [pick(advisor(store, explore=uncapped)) for _ in range(40)]



def test_the_model_holding_a_kind_keeps_it_through_chance_failures_until_the_evidence_shows_a_gap() -> None:
    store = Store()
    store.add(STRONG, 0.95, 20)
    store.add(CHEAP, 0.95, 10)
    holding = advisor(store)
    assert pick(holding) == CHEAP
    store.add(CHEAP, 0.05, 2)  # two chance failures: the mean alone now trails by more than the tolerance
    assert pick(advisor(store)) == STRONG  # a process that never routed here takes no route on them
    assert pick(holding) == CHEAP  # the holder keeps it: P(it trails by more than the tolerance) is ~0.8
    assert pick(advisor(store, PatternSettings(hold_confidence=0))) == STRONG
    store.add(CHEAP, 0.05, 4)  # a fall: below the success floor, and a change the change test finds
    assert pick(holding) == STRONG


def test_a_model_that_lost_a_kind_to_chance_failures_is_tried_again_as_the_kind_moves_on() -> None:
    def explored(later_turns: int) -> int:
        store = Store()
        store.add(STRONG, 0.95, 20)
        for score in (0.95, 0.05, 0.05):  # one good rating, then two chance failures: the kind goes back
            store.add(CHEAP, score)
        store.add(STRONG, 0.95, later_turns)  # turns since, all on the strong model
        a = advisor(store, explore=ExplorationSettings(share=1.0, usd_per_day=Decimal(10), candidates=[CHEAP]))
        return [pick(a) for _ in range(300)].count(CHEAP)

    # users' ratings of a model no one routes to fade with the kind's later turns, as the routed one's do,
    # so the draw widens again instead of staying at two failures in three for good
    assert explored(40) > 3 * explored(0)
