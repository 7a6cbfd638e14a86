"""What routing refusals say to a person: the policy slots by what they mean, not their trace names."""

from __future__ import annotations

from metis_core.routing.engine import NoRoutableModelError, PolicyVerdict


def test_a_refusal_names_no_internal_policy_slot() -> None:
    error = NoRoutableModelError([
        PolicyVerdict("per_message_override", "not_applicable", None, "no @model in the message"),
        PolicyVerdict("manual_sticky", "rejected", "openai:gpt-4o", "~9000 tokens exceed the window"),
        PolicyVerdict("global_default", "rejected", "anthropic:claude-sonnet-4-6", "benched after failures"),
    ])
    text = str(error)
    assert "manual_sticky" not in text and "global_default" not in text
    assert text == ("no model can take this turn: the model chosen with /model or --model openai:gpt-4o: ~9000 "
                    "tokens exceed the window; the default model anthropic:claude-sonnet-4-6: benched after failures")
