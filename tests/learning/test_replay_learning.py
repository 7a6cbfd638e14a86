"""`metis learn` as a library call: from a store that only ever saw the strong model, replay its
turns on a cheaper candidate, have the judge score them, and record learned evidence, within a
budget estimated before anything runs."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from metis_core.learning.replay_learning import LearnPlanError, ReplayLearner
from metis_core.learning.settings import LearningSettings

from .conftest import CHEAP, STRONG, LearningHarness
from .test_evaluator import judge_reply
from .test_pattern_routing import SUMMARY, session

GOOD = '{"score": 0.95, "confidence": 0.9, "rationale": "does what was asked", "criteria": {}}'
WRONG_ORIGINAL = '{"score": 0.2, "confidence": 0.9, "rationale": "misses the point", "criteria": {}}'


async def test_learn_replays_within_its_budget_and_records_learned_evidence(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "routing.yaml").write_text(f"default: {STRONG}\n")
    history = LearningHarness(home, tmp_path / "ws")
    try:
        for good in (True, True, False):  # the user was unhappy with the latest one
            await session(history, SUMMARY, good=good)
        with pytest.raises(LearnPlanError, match=r"learning\.judge_model"):
            ReplayLearner(history.loop).plan([CHEAP])
    finally:
        history.runtime.close()

    h = LearningHarness(home, tmp_path / "ws", LearningSettings(judge_model=CHEAP))
    try:
        learner = ReplayLearner(h.loop)
        plan = learner.plan([CHEAP], per_kind=2)
        assert [(r.candidate, r.original_model, r.turn_index) for r in plan.replays] == [(CHEAP, STRONG, 1)] * 2
        one = plan.replays[0].estimated_usd
        assert one > 0 and plan.estimated_usd == 2 * one
        dry = await learner.run(plan, Decimal(1), dry_run=True)
        assert dry.replayed == 0 and not h.script.requests
        h.answers(1)
        h.script.script("anthropic", [judge_reply(GOOD), judge_reply(WRONG_ORIGINAL)])
        report = await learner.run(plan, one * Decimal("1.5"))  # room for one replay, not two
        assert (report.replayed, report.failed, report.stopped_at_budget) == (1, 0, 1)
        assert Decimal(0) < report.spent_usd <= one * Decimal("1.5")
        assert len(h.script.requests) == 3  # the replayed turn, its judge, the judge on the original answer
        (kind,) = report.kinds
        assert kind.turns == 3 and kind.features["lead"] == "summarize"
        cheap = next(m for m in kind.models if m.model == CHEAP)
        assert (cheap.outcomes, cheap.learned) == (1, 1)
        # pairwise against an answer the user rated down (0.05): moved by the judge's 0.95 - 0.2
        assert cheap.mean_score == pytest.approx(0.8, abs=1e-3) and cheap.success == pytest.approx(0.6, abs=1e-3)
        assert cheap.interval[0] < cheap.success < cheap.interval[1]
        learned = [o for o in h.loop.patterns.outcomes([kind.fingerprint_id]) if o.model == CHEAP]
        assert [o.source for o in learned] == ["learned"]
        assert {m.model for m in kind.models} == {CHEAP, STRONG}
        assert report.to_json()["kinds"][0]["models"]

        again = learner.plan([CHEAP], per_kind=2)  # one more to reach two of evidence: a turn rated up
        assert [r.original_score for r in again.replays] == [0.95]
        h.answers(1)
        h.script.script("anthropic", [judge_reply(GOOD)])
        second = await learner.run(again, Decimal(1))
        assert second.replayed == 1 and len(h.script.requests) == 5  # no pairwise call: the user was happy
        scores = sorted(o.score or 0 for o in h.loop.patterns.outcomes([kind.fingerprint_id]) if o.model == CHEAP)
        assert scores == [0.8, 0.95]  # the judge's own score, on the user's scale
    finally:
        h.runtime.close()
