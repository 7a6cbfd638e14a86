"""Exploration through the real routing chain: route.decided says when a turn explores, and a
turn the user pinned with @model is never explored."""

from __future__ import annotations

from pathlib import Path

from metis_core.learning.patterns.explain import explain_turn, routed_turns

from .conftest import CHEAP, STRONG
from .test_pattern_routing import SUMMARY, learning_harness, session


async def test_route_decided_marks_an_explored_turn_and_pinned_turns_are_never_explored(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n",
                         exploration={"share": 1.0, "usd_per_day": "1", "candidates": [CHEAP], "seed": 3})
    try:
        pinned = [await session(h, SUMMARY, model=STRONG, good=True) for _ in range(5)]  # only ever strong
        for sid in pinned:
            (decided,) = h.of_type("route.decided", sid)
            assert decided.payload["chosen_model"] == STRONG
            assert not any(v.get("exploration") for v in decided.payload["chain"])
        assert h.loop.explorer.explored == 0
        routed = [await session(h, SUMMARY, good=True) for _ in range(6)]
        decisions = [h.of_type("route.decided", sid)[0].payload for sid in routed]
        explored = [d for d in decisions if d["chosen_model"] == CHEAP]
        assert explored, "a seeded run explores the cheap model within six turns"
        slot = explored[0]["chain"][3]
        assert slot["policy"] == "pattern" and slot["verdict"] == "chose" and slot["exploration"] is True
        assert slot["reason"].startswith(f"exploration: trying {CHEAP}") and STRONG in slot["reason"]
        assert not any(d["chain"][3].get("exploration") for d in decisions if d["chosen_model"] == STRONG)
        turn = h.of_type("route.decided", routed[decisions.index(explored[0])])[0].turn_id
        assert turn is not None and routed_turns(h.loop)[0] == h.of_type("route.decided", routed[-1])[0].turn_id
        why = explain_turn(h.loop, turn)
        assert why is not None and why.exploration and why.chosen_model == CHEAP
        assert why.posteriors[0].model in (CHEAP, STRONG) and why.features and why.features["lead"] == "summarize"
        assert explain_turn(h.loop, "no-such-turn") is None
    finally:
        h.runtime.close()
