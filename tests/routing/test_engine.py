"""The routing chain: each policy's verdict recorded, candidates validated against the turn's needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_core.errors import ServerError
from metis_core.models.registry import default_registry
from metis_core.routing.engine import NoRoutableModelError, RoutingEngine, TurnNeeds
from metis_core.routing.health import HealthPolicy, HealthTracker
from metis_core.routing.policy_file import PolicyLoader

POLICIES = ["per_message_override", "manual_sticky", "rule", "pattern", "delegate_request",
            "workspace_default", "global_default"]


def engine(tmp_path: Path, workspace_yaml: str = "", global_yaml: str = "", **kwargs: object) -> RoutingEngine:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    if workspace_yaml:
        (ws / "routing.yaml").write_text(workspace_yaml)
    if global_yaml:
        (home / "routing.yaml").write_text(global_yaml)
    return RoutingEngine(default_registry(), loader=PolicyLoader(ws, home), **kwargs)  # type: ignore[arg-type]


def test_chain_records_every_policy_in_order(tmp_path: Path) -> None:
    decision = engine(tmp_path, global_yaml="default: anthropic:claude-sonnet-4-6\n").decide(TurnNeeds())
    assert [v.policy for v in decision.chain] == POLICIES
    assert decision.chosen_model == "anthropic:claude-sonnet-4-6"
    assert decision.chain[decision.winner_index].policy == "global_default"
    assert decision.chain[decision.winner_index].verdict == "chose"
    assert decision.record.mode.value == "default"
    payload = decision.payload()
    assert set(payload) == {"chosen_model", "winner_index", "elapsed_ms", "chain"}
    assert set(payload["chain"][0]) == {"policy", "verdict", "candidate_model", "reason", "rule_name", "confidence",
                                         "pattern_alternatives", "validation_failure"}


def test_override_beats_sticky_beats_default(tmp_path: Path) -> None:
    routing = engine(tmp_path, global_yaml="default: sonnet\n")
    assert routing.decide(TurnNeeds(), sticky="openai:gpt-5").chosen_model == "openai:gpt-5"
    decision = routing.decide(TurnNeeds(), override="gemini:gemini-2.5-flash", sticky="openai:gpt-5")
    assert decision.chosen_model == "gemini:gemini-2.5-flash"
    assert decision.record.mode.value == "override"
    assert decision.chain[1].verdict == "not_applicable"


def test_candidate_that_cannot_see_images_is_rejected_and_next_policy_tried(tmp_path: Path) -> None:
    routing = engine(tmp_path, global_yaml="default: anthropic:claude-sonnet-4-6\n")
    decision = routing.decide(TurnNeeds(has_images=True), sticky="ollama:llama3")
    sticky = decision.chain[1]
    assert sticky.verdict == "rejected" and sticky.validation_failure == "no_vision_support"
    assert decision.chosen_model == "anthropic:claude-sonnet-4-6"


def test_context_window_is_checked(tmp_path: Path) -> None:
    routing = engine(tmp_path, global_yaml="default: gemini:gemini-2.5-pro\n")
    decision = routing.decide(TurnNeeds(estimated_input_tokens=500_000), sticky="anthropic:claude-haiku-4-5")
    assert decision.chain[1].validation_failure == "exceeds_context_window"
    assert decision.chosen_model == "gemini:gemini-2.5-pro"


def test_rules_match_on_keyword_pattern_and_needs(tmp_path: Path) -> None:
    routing = engine(tmp_path, workspace_yaml="""
default: sonnet
rules:
  - name: commits
    when: {keyword: commit}
    model: haiku
  - name: tickets
    when: {pattern: 'JIRA-\\d+'}
    model: openai:gpt-5-mini
""")
    decision = routing.decide(TurnNeeds(user_text="write the Commit message"))
    assert decision.chosen_model == "anthropic:claude-haiku-4-5"
    rule = decision.chain[2]
    assert rule.verdict == "chose" and rule.rule_name == "commits" and decision.record.rule_name == "commits"
    assert routing.decide(TurnNeeds(user_text="fix JIRA-42")).chosen_model == "openai:gpt-5-mini"
    assert routing.decide(TurnNeeds(user_text="hello")).record.mode.value == "default"


def test_chain_spec_keeps_fitting_members_as_fallbacks(tmp_path: Path) -> None:
    routing = engine(tmp_path, global_yaml="""
chains:
  resilient: [anthropic:claude-sonnet-4-6, ollama:llama3, openai:gpt-5, anthropic:claude-sonnet-4-6]
default: resilient
""")
    decision = routing.decide(TurnNeeds(has_images=True))
    assert decision.members == ["anthropic:claude-sonnet-4-6", "openai:gpt-5"]  # deduplicated, llama3 can't see


def test_benched_model_is_rejected_as_provider_unavailable(tmp_path: Path) -> None:
    health = HealthTracker(HealthPolicy(failure_threshold=1), clock=lambda: 0.0)
    health.record_failure("openai:gpt-5", ServerError("down", provider="openai", status=503))
    routing = engine(tmp_path, global_yaml="default: sonnet\n", health=health)
    decision = routing.decide(TurnNeeds(), sticky="openai:gpt-5")
    assert decision.chain[1].validation_failure == "provider_unavailable"
    assert decision.chosen_model == "anthropic:claude-sonnet-4-6"


def test_unconfigured_provider_is_rejected(tmp_path: Path) -> None:
    routing = engine(tmp_path, global_yaml="default: sonnet\n", is_configured=lambda m: not m.startswith("openai"))
    decision = routing.decide(TurnNeeds(), sticky="openai:gpt-5")
    assert decision.chain[1].validation_failure == "not_configured"


def test_no_model_at_all_is_a_named_error(tmp_path: Path) -> None:
    with pytest.raises(NoRoutableModelError, match="no default model is configured"):
        engine(tmp_path).decide(TurnNeeds())


def test_per_member_settings_follow_the_member(tmp_path: Path) -> None:
    routing = engine(tmp_path, global_yaml="""
default: anthropic:claude-sonnet-4-6, openai:gpt-5
settings:
  openai:gpt-5: {reasoning_effort: low, max_tokens: 4000}
  anthropic:claude-sonnet-4-6: {temperature: 0.2}
""")
    decision = routing.decide(TurnNeeds())
    assert decision.settings["openai:gpt-5"].reasoning_effort == "low"
    assert decision.settings["anthropic:claude-sonnet-4-6"].temperature == 0.2


def test_a_model_that_cannot_carry_the_output_schema_is_rejected(tmp_path: Path) -> None:
    """A forced tool carries only an object root: a Claude model without native structured output cannot
    take an array answer, one with it can."""
    routing = engine(tmp_path, global_yaml="default: anthropic:claude-sonnet-4-5\n")
    needs = TurnNeeds(output_schema={"type": "array", "items": {"type": "integer"}})
    decision = routing.decide(needs, sticky="anthropic:claude-3-5-haiku-latest")
    sticky = decision.chain[1]
    assert sticky.verdict == "rejected" and sticky.validation_failure == "no_structured_output_support"
    assert "forced tool carries only an object root" in sticky.reason
    assert decision.chosen_model == "anthropic:claude-sonnet-4-5"


def test_a_schema_no_native_mode_can_carry_leaves_only_instruction_models(tmp_path: Path) -> None:
    recursive = {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
                 "$ref": "#/$defs/node"}
    routing = engine(tmp_path, global_yaml="default: openai_compatible:local\n")
    decision = routing.decide(TurnNeeds(output_schema=recursive), sticky="openai:gpt-4o")
    assert decision.chain[1].validation_failure == "no_structured_output_support"
    assert decision.chosen_model == "openai_compatible:local"


def test_a_worker_is_routed_by_its_tier_through_the_delegate_slot_and_rules_stand_aside(tmp_path: Path) -> None:
    rules = ("default: anthropic:claude-sonnet-4-6\nrules:\n  - name: tools\n    when: {has_tools: true}\n"
             "    model: openai:gpt-4o\n")
    routing = engine(tmp_path, global_yaml=rules)
    planner = routing.decide(TurnNeeds(has_tools=True))
    assert planner.chosen_model == "openai:gpt-4o"
    assert planner.chain[POLICIES.index("delegate_request")].verdict == "not_applicable"
    worker = routing.decide(TurnNeeds(has_tools=True), delegate="anthropic:claude-haiku-4-5")
    assert worker.chosen_model == "anthropic:claude-haiku-4-5" and worker.record.mode.value == "delegate"
    rule = worker.chain[POLICIES.index("rule")]
    assert rule.verdict == "not_applicable" and rule.reason == "a delegated worker routes by its tier"
    assert worker.chain[worker.winner_index].policy == "delegate_request"


def test_a_turn_asking_for_a_hosted_tool_is_refused_by_a_model_without_it(tmp_path: Path) -> None:
    routing = engine(tmp_path, global_yaml="default: anthropic:claude-sonnet-4-6\n")
    needs = TurnNeeds(hosted_tools=("web_search",))
    decision = routing.decide(needs, sticky="openai:gpt-4.1")  # Chat Completions exposes no hosted tools
    sticky = decision.chain[1]
    assert sticky.verdict == "rejected" and sticky.validation_failure == "no_tool_support"
    assert "hosted tool(s) web_search" in sticky.reason and "offers: none" in sticky.reason
    assert decision.chosen_model == "anthropic:claude-sonnet-4-6"
    assert routing.decide(needs, override="openai_responses:gpt-4.1").chosen_model == "openai_responses:gpt-4.1"
    with pytest.raises(NoRoutableModelError, match="cannot run the hosted tool"):
        engine(tmp_path, global_yaml="default: openai_responses:gpt-4.1-nano\n").decide(needs)
