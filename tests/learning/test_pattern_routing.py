"""Pattern store and pattern routing over real sessions: history scored by explicit feedback makes
the pattern slot pick the cheap model where it succeeds and keep the strong one where it fails."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from metis_core.agent.route_advice import RouteSuggestion
from metis_core.agent.turn import TurnResult
from metis_core.events.envelope import Actor, Sensitivity
from metis_core.learning.settings import LearningSettings

from .conftest import CHEAP, STRONG, LearningHarness

SUMMARY = "Summarize the meeting notes in three bullet points"
PROOF = "Prove that the square root of two is irrational"


async def session(h: LearningHarness, text: str, *, model: str | None = None, good: bool | None = None) -> str:
    h.answers(1)
    s = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(s, text, override=model)
    if good is not None:
        h.loop.feedback.rate(s.id, "up" if good else "down")
    h.runtime.sessions.end(s)
    h.events()
    return s.id


async def teach(h: LearningHarness, rounds: int = 5) -> None:
    """Both models summarize well; only the strong one proves."""
    for _ in range(rounds):
        await session(h, SUMMARY, model=CHEAP, good=True)
        await session(h, SUMMARY, model=STRONG, good=True)
        await session(h, PROOF, model=CHEAP, good=False)
        await session(h, PROOF, model=STRONG, good=True)


async def advised_summary(h: LearningHarness, answer: str) -> tuple[str, TurnResult, list[RouteSuggestion]]:
    """Teach `h`, answer its route advice with `answer` and run one summary turn: the session's id,
    the turn's result and the suggestions the advice was asked about."""
    await teach(h)
    asked: list[RouteSuggestion] = []

    async def advise(suggestion: RouteSuggestion) -> str:
        asked.append(suggestion)
        return answer

    h.runtime.route_advice = advise  # type: ignore[assignment]
    h.answers(1)
    s = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(s, "Summarize the quarterly report in three bullet points")
    return s.id, result, asked


def learning_harness(tmp_path: Path, routing_yaml: str, **settings: object) -> LearningHarness:
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "routing.yaml").write_text(routing_yaml)
    return LearningHarness(tmp_path / "home", tmp_path / "ws", LearningSettings.model_validate(settings))


async def test_session_end_records_each_turn_as_a_pattern(learning: LearningHarness) -> None:
    h = learning
    first = await session(h, SUMMARY, model=CHEAP, good=True)
    second = await session(h, SUMMARY, model=CHEAP, good=False)
    (recorded,) = h.of_type("pattern.recorded", first)
    ended = h.of_type("session.ended", first)[0]
    assert recorded.parent_event_id == ended.id and recorded.actor is Actor.SYSTEM
    assert recorded.sensitivity is Sensitivity.PSEUDONYMOUS
    completed = h.of_type("llm.call_completed", first)[0]
    p = recorded.payload
    assert p["primary_model"] == CHEAP and p["fingerprint_kind"] == "structural" and p["was_new_fingerprint"]
    assert (p["sample_size_before"], p["sample_size_after"]) == (0, 1) and p["success_score"] == 0.95
    assert Decimal(p["cost_usd_at_record"]) == Decimal(str(completed.payload["cost_usd"])) > 0
    assert p["over_soft_cap"] is False
    assert p["pricing_version"] == completed.payload["pricing_version"]
    (again,) = h.of_type("pattern.recorded", second)
    assert again.payload["fingerprint_id"] == p["fingerprint_id"] and not again.payload["was_new_fingerprint"]
    assert (again.payload["sample_size_before"], again.payload["success_score"]) == (1, 0.05)


async def test_history_routes_summaries_to_the_cheap_model_and_keeps_proofs_on_the_strong_one(
    learning: LearningHarness,
) -> None:
    h = learning
    await teach(h)
    summary = await session(h, "Summarize the quarterly report in three bullet points")
    proof = await session(h, "Prove that there are infinitely many primes")

    decided = h.of_type("route.decided", summary)[0]
    (matched,) = h.of_type("pattern.matched", summary)
    assert decided.payload["chosen_model"] == CHEAP
    slot = decided.payload["chain"][3]
    assert slot["policy"] == "pattern" and slot["verdict"] == "chose" and slot["candidate_model"] == CHEAP
    assert slot["confidence"] == matched.payload["confidence"] >= 0.6
    assert {a["model"] for a in slot["pattern_alternatives"]} == {CHEAP, STRONG}
    assert matched.parent_event_id == decided.id and matched.sensitivity is Sensitivity.PSEUDONYMOUS
    assert matched.payload["chosen_model"] == CHEAP and matched.payload["sample_size"] == 5
    assert matched.payload["alternatives_count"] == 2 and matched.payload["k_cluster_size"] >= 1
    assert h.of_type("llm.call_started", summary)[0].payload["model"] == CHEAP

    decided = h.of_type("route.decided", proof)[0]
    assert decided.payload["chosen_model"] == STRONG
    assert decided.payload["chain"][3]["verdict"] == "chose"
    assert h.of_type("pattern.matched", proof)[0].payload["chosen_model"] == STRONG


async def test_without_enough_history_the_slot_stays_out_of_the_way(learning: LearningHarness) -> None:
    h = learning
    await session(h, SUMMARY, model=CHEAP, good=True)
    sid = await session(h, SUMMARY)
    slot = h.of_type("route.decided", sid)[0].payload["chain"][3]
    assert slot["verdict"] == "not_applicable" and slot["reason"] == "no confident pattern for turns like this yet"
    assert h.of_type("pattern.matched", sid) == []


RULE = f"default: {STRONG}\nrules:\n  - name: summaries\n    when: {{keyword: summarize}}\n    model: {STRONG}\n"


async def test_route_override_redispatches_to_the_pattern_model(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, RULE)
    try:
        sid, result, asked = await advised_summary(h, "override")
        events = h.events(sid)
        (decided,) = [e for e in events if e.type == "route.decided"]
        (overridden,) = [e for e in events if e.type == "route.overridden"]
        (call,) = [e for e in events if e.type == "llm.call_started"]
        assert asked[0].suggested_model == CHEAP and asked[0].rule_name == "summaries"
        assert decided.payload["chosen_model"] == STRONG
        slot = decided.payload["chain"][3]
        assert slot["verdict"] == "deferred" and slot["candidate_model"] == CHEAP and slot["confidence"] >= 0.6
        assert overridden.parent_event_id == decided.id and overridden.actor is Actor.USER
        assert overridden.sensitivity is Sensitivity.PSEUDONYMOUS and overridden.turn_id == result.turn_id
        assert overridden.payload == {"original_chosen_model": STRONG, "new_chosen_model": CHEAP,
                                      "deferred_policy": "pattern", "rule_name": "summaries",
                                      "pattern_confidence": slot["confidence"]}
        assert call.parent_event_id == overridden.id and call.payload["model"] == CHEAP
        assert result.model == CHEAP and result.suggestion is None
        stored = h.runtime.trace.get(decided.id)
        assert stored is not None and stored.payload == decided.payload  # the decision is left as it was
        assert [e.type for e in events].count("route.decided") == 1
        assert h.of_type("pattern.matched", sid) == []
    finally:
        h.runtime.close()


async def test_route_ignore_dismisses_and_keeps_the_rule_model(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, RULE)
    try:
        sid, _, _ = await advised_summary(h, "ignore")
        events = h.events(sid)
        (decided,) = [e for e in events if e.type == "route.decided"]
        (dismissed,) = [e for e in events if e.type == "pattern.override_dismissed"]
        (call,) = [e for e in events if e.type == "llm.call_started"]
        assert dismissed.parent_event_id == decided.id and dismissed.actor is Actor.USER
        assert dismissed.sensitivity is Sensitivity.PSEUDONYMOUS
        assert dismissed.payload == {"chosen_model": STRONG, "dismissed_pattern_model": CHEAP,
                                     "rule_name": "summaries",
                                     "pattern_confidence": decided.payload["chain"][3]["confidence"]}
        assert call.payload["model"] == STRONG and not [e for e in events if e.type == "route.overridden"]
    finally:
        h.runtime.close()


async def test_caps_age_trim_and_clear_emit_pattern_evicted(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", patterns={"soft_cap_rows": 1, "hard_cap_rows": 2})
    try:
        await session(h, SUMMARY, good=True)
        second = await session(h, PROOF, good=True)
        (signal,) = h.of_type("pattern.evicted", second)
        (recorded,) = h.of_type("pattern.recorded", second)
        assert signal.parent_event_id == recorded.id and recorded.payload["over_soft_cap"]
        assert signal.payload == {"trigger": "soft_cap_signal", "fingerprints_before": 2, "fingerprints_after": 2,
                                  "outcomes_before": 2, "outcomes_after": 2, "entries_evicted": 0,
                                  "oldest_evicted_age_days": None}
        third = await session(h, "Translate this sentence into French", good=True)
        (evicted,) = h.of_type("pattern.evicted", third)
        assert evicted.payload["trigger"] == "hard_cap_evict" and evicted.payload["entries_evicted"] == 2
        assert evicted.payload["outcomes_after"] == 1 and evicted.payload["fingerprints_after"] == 1
        assert evicted.sensitivity is Sensitivity.PSEUDONYMOUS and evicted.actor is Actor.SYSTEM
        cleared = h.loop.clear_patterns()
        assert cleared is not None and cleared.parent_event_id is None
        assert cleared.payload["trigger"] == "manual_clear" and cleared.payload["outcomes_after"] == 0
        assert h.loop.patterns.counts() == (0, 0)
    finally:
        h.runtime.close()


async def test_outcomes_past_the_age_limit_are_trimmed(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", patterns={"max_age_days": 1e-9})
    try:
        sid = await session(h, SUMMARY, good=True)
        (trimmed,) = h.of_type("pattern.evicted", sid)
        assert trimmed.parent_event_id is None and trimmed.payload["trigger"] == "age_trim"
        assert trimmed.payload["entries_evicted"] == 1 and trimmed.payload["oldest_evicted_age_days"] is not None
    finally:
        h.runtime.close()
