"""Verification by replay: a cheap model's failure on a kind it holds makes it suspect; the loop
replays its recent successful turns there on it, the verification judge scores them, and the
outcomes settle the question (a fall confirmed moves the route, successes keep it), within a budget."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from metis_core.learning.patterns.evidence import falling_evidence
from metis_core.learning.patterns.explain import explain_turn
from metis_core.learning.replay_learning import ReplayLearner
from metis_core.learning.settings import PatternSettings
from metis_core.store.backend import DATABASE_URL_ENV

from .conftest import CHEAP, STRONG, LearningHarness
from .test_evaluator import judge_reply
from .test_pattern_routing import SUMMARY, learning_harness, session

SETTINGS: dict[str, Any] = {"verification": {"judge_model": CHEAP, "replays": 3, "suspicion": 0.25},
            "patterns": {"change_baseline": 2, "change_threshold": 2.0}}


@pytest.fixture(autouse=True)
def learning_backend(monkeypatch: pytest.MonkeyPatch) -> str:
    """SQLite only: verification reads and writes through the stores the other tests run on both backends."""
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    return "sqlite"


def verdict(score: float) -> str:
    return json.dumps({"score": score, "confidence": 0.9, "rationale": "graded", "criteria": {}})


async def held_by_cheap(h: LearningHarness) -> str:
    """Three good summaries on the cheap model and three on the strong one at a higher cost (recorded
    directly): routing gives the kind to the cheap model. The kind's fingerprint id."""
    for _ in range(3):
        await session(h, SUMMARY, model=CHEAP, good=True)
    (stored,) = h.loop.patterns.fingerprints()
    for i in range(3):
        h.loop.patterns.record(stored.fingerprint, session_id=f"strong-{i}", turn_id=f"strong-turn-{i}", model=STRONG,
                               score=0.95, cost_usd=Decimal("0.05"), latency_ms=1, pricing_version="test")
    assert picks(h, stored.id) == CHEAP and h.loop.verifier.replayed == 0
    return stored.id


def picks(h: LearningHarness, fingerprint_id: str) -> str | None:
    tallies = h.loop.advisor.tally(h.loop.patterns.outcomes([fingerprint_id]), {fingerprint_id: 0.0})
    chosen = h.loop.advisor.choose(tallies)
    return chosen.model if chosen is not None else None


async def cheap_fails(h: LearningHarness, judged: list[float]) -> str:
    """The cheap model gets a summary wrong (rated down); each verification replay is answered and
    then judged with the next of `judged`. The failed turn's id."""
    h.answers(1)
    for score in judged:
        h.answers(1)
        h.script.script("anthropic", [judge_reply(verdict(score))])
    s = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(s, SUMMARY, override=CHEAP)
    h.loop.feedback.rate(s.id, "down")
    h.runtime.sessions.end(s)
    h.loop.settle()
    return result.turn_id


def learned(h: LearningHarness, fingerprint_id: str) -> list[float]:
    return [o.score or 0.0 for o in h.loop.patterns.outcomes([fingerprint_id])
            if o.model == CHEAP and o.source == "learned"]


async def test_a_confirmed_fall_moves_the_route_after_a_bounded_replay(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", **SETTINGS)
    try:
        kind = await held_by_cheap(h)
        await cheap_fails(h, [0.1, 0.1])
        # the failure and two failed replays pass the change threshold: verification stops there
        assert h.loop.verifier.replayed == 2 and learned(h, kind) == [0.1, 0.1]
        assert picks(h, kind) == STRONG
        replays = [s for s in h.runtime.store.list_sessions() if s.replay_of]
        assert len(replays) == 2 and all(s.active_model == CHEAP for s in replays)
        judged = [e for e in h.events() if e.type == "eval.completed" and e.session_id == replays[0].id
                  and e.payload["subject_kind"] == "turn"]
        assert [(e.payload["judge_kind"], e.payload["judge_model"]) for e in judged] == [("llm", CHEAP)]
        assert Decimal(0) < h.loop.verifier.spent_usd <= Decimal("0.10")
        assert len(h.script.requests) == 4 + 2 * 2  # four sessions; each replay answered and judged once
    finally:
        h.runtime.close()


async def test_successful_replays_clear_a_suspicion_and_keep_the_route(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", **SETTINGS)
    try:
        kind = await held_by_cheap(h)
        await cheap_fails(h, [0.95])
        assert h.loop.verifier.replayed == 1 and learned(h, kind) == [0.95]
        assert picks(h, kind) == CHEAP
        assert len(h.script.requests) == 4 + 2
    finally:
        h.runtime.close()


async def test_the_budget_caps_verification(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", **SETTINGS)
    try:
        kind = await held_by_cheap(h)
        newest = h.loop.patterns.latest_outcomes(CHEAP, 1)[0]
        planned = ReplayLearner(h.loop).planned_replay(newest, CHEAP, CHEAP)
        assert planned is not None
        h.loop.verifier.settings.usd_per_day = planned.estimated_usd  # room for one replay's estimate, not two
        failed = await cheap_fails(h, [0.1])
        assert h.loop.verifier.replayed == 1 and learned(h, kind) == [0.1]
        assert h.loop.verifier.spent_usd <= h.loop.verifier.settings.usd_per_day
        assert h.loop.verifier.suspect_turn(CHEAP) is not None  # still suspect: the budget stopped it
        explained = explain_turn(h.loop, failed)
        assert explained is not None
        fall = explained.to_json()["fall_evidence"]
        assert fall[STRONG] == 0.0 and SETTINGS["verification"]["suspicion"] <= fall[CHEAP] < 1.0
        assert len(h.script.requests) == 4 + 2
    finally:
        h.runtime.close()


def test_without_a_judge_or_a_budget_nothing_is_verified(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", verification={"usd_per_day": "0"},
                         judge_model=CHEAP)
    try:
        assert not h.loop.verifier.enabled and h.loop.triggers.skip is None
        assert "learning-verifier" not in {s.subscription.name for s in h.runtime.bus.subscriptions}
    finally:
        h.runtime.close()


def test_the_fall_statistic_rises_with_failures_on_a_held_kind_and_clears_with_successes() -> None:
    s = PatternSettings(change_baseline=4)
    held = [("fp", "summarize", 0.95)] * 8
    assert falling_evidence(held, s) == 0.0
    one = falling_evidence([*held, ("fp", "summarize", 0.05)], s)
    two = falling_evidence([*held, ("fp", "summarize", 0.05), ("fp2", "summarize", 0.05)], s)
    assert 0.1 < one < two < 1.0  # a fall building up, short of a change
    cleared = falling_evidence([*held, ("fp", "summarize", 0.05), *[("fp", "summarize", 0.95)] * 2], s)
    assert cleared < one
    assert falling_evidence([*held, ("fp", "summarize", 0.05)], PatternSettings(change_threshold=0)) == 0.0
