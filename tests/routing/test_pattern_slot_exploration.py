"""The routing chain lets the pattern slot explore only when it may choose: never when a rule
decided (it can only be deferred there), and not at all for a pinned turn (it is not asked)."""

from __future__ import annotations

from pathlib import Path

from metis_core.routing.engine import RoutingEngine, TurnNeeds
from metis_core.routing.pattern_slot import ExplorationDraw, PatternRecommendation

from .test_engine import engine

CHEAP = "anthropic:claude-haiku-4-5"


class ExploringAdvisor:
    def __init__(self) -> None:
        self.asked: list[bool] = []

    def recommend(self, needs: TurnNeeds, *, explore: bool = True) -> PatternRecommendation | None:
        self.asked.append(explore)
        draw = ExplorationDraw("anthropic:claude-opus-4-6", 0.9, 0.88, 0.0) if explore else None
        return PatternRecommendation(CHEAP, 0.0, "fp", "structural", 0, 1, exploration=draw)


def test_exploration_is_asked_for_only_where_the_slot_can_choose(tmp_path: Path) -> None:
    advisor = ExploringAdvisor()
    routing: RoutingEngine = engine(tmp_path, global_yaml="default: anthropic:claude-opus-4-6\nrules:\n"
                                    "  - name: docs\n    when: {keyword: docs}\n    model: anthropic:claude-opus-4-6\n",
                                    advisor=advisor)
    free = routing.decide(TurnNeeds(user_text="summarize this"))
    slot = free.chain[3]
    assert free.chosen_model == CHEAP and slot.exploration is True and slot.reason.startswith("exploration:")
    assert free.payload()["chain"][3]["exploration"] is True
    ruled = routing.decide(TurnNeeds(user_text="write the docs"))
    assert ruled.chosen_model != CHEAP and ruled.deferred_pattern is not None
    assert "exploration" not in ruled.payload()["chain"][3]
    pinned = routing.decide(TurnNeeds(user_text="summarize this"), override="anthropic:claude-opus-4-6")
    assert pinned.chosen_model == "anthropic:claude-opus-4-6"
    assert advisor.asked == [True, False]  # the pinned turn never asked
