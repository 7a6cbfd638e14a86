"""Payloads of route.decided and the routing domain (spec §6.5): the routing decision with its
full policy chain, an invalid policy file, providers going down or coming back, and a model swap
refused for a missing capability (routing.constraint_failure, canonical format §8.4).

User actions on a decision after the fact (route.overridden, pattern.*) are in `pattern.py`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import (
    NonNegativeFloat,
    NonNegativeInt,
    PayloadModel,
    ProviderScope,
    UnitInterval,
)

RoutingPolicyName = Literal[
    "per_message_override", "manual_sticky", "rule", "pattern", "delegate_request",
    "workspace_default", "global_default",
]  # fmt: skip
RoutingValidationFailure = Literal[
    "no_vision_support", "exceeds_context_window", "no_tool_support", "no_system_prompt_support",
    "no_structured_output_support", "provider_unavailable", "not_configured",
]  # fmt: skip


class PatternAlternative(PayloadModel):
    """One model the pattern store scored, with the evidence behind the score."""

    model: str
    score: float
    sample_size: NonNegativeInt


class RouteChainEntry(PayloadModel):
    """What one routing policy said about this turn, in chain order."""

    policy: RoutingPolicyName
    verdict: Literal["not_applicable", "deferred", "rejected", "chose"]
    candidate_model: str | None = None
    reason: str
    rule_name: str | None = None
    confidence: UnitInterval | None = None
    pattern_alternatives: list[PatternAlternative] | None = None
    validation_failure: RoutingValidationFailure | None = None
    exploration: bool | None = None
    """True when the pattern slot chose a model with little evidence to try it (bounded exploration;
    the reason says why); absent otherwise."""


class RouteDecidedPayload(PayloadModel):
    """The one routing decision of a turn (exactly one per turn, routing-engine §7.2)."""

    chosen_model: str
    winner_index: NonNegativeInt
    elapsed_ms: NonNegativeFloat
    chain: list[RouteChainEntry] = Field(min_length=1)


class RoutingPolicyInvalidPayload(PayloadModel):
    """routing.yaml failed to load; the last known good policy may stay in force."""

    policy_path: str
    errors: list[str]
    using_last_known_good: bool


class RoutingProviderUnavailablePayload(PayloadModel):
    """A provider (or some of its models) crossed the failure threshold and is benched."""

    provider: str
    scope: ProviderScope
    models_affected: list[str]
    trigger_reason: str


class RoutingProviderRecoveredPayload(PayloadModel):
    """A benched provider answered again."""

    provider: str
    scope: ProviderScope
    models_recovered: list[str]
    downtime_seconds: NonNegativeFloat


class RoutingConstraintFailurePayload(PayloadModel):
    """A requested model was refused because it cannot carry the session (designed here: §8.4 names
    a `routing_constraint_failure` event without a payload). The active model stays as it was."""

    action: Literal["model_swap"]
    requested: str
    """What was asked for: a model id, alias or chain."""
    candidate_model: str
    """The model that was checked (the first member of a chain)."""
    active_model: str | None
    """The model the session keeps (None: the routing default)."""
    validation_failure: RoutingValidationFailure
    missing_capability: str
    """The capability field the candidate lacks, e.g. supports_images, max_context_tokens."""
    reason: str


_SYSTEM = (Actor.SYSTEM,)
_PSEUDO = Sensitivity.PSEUDONYMOUS
SPECS = (
    EventSpec("route.decided", RouteDecidedPayload, _PSEUDO, _SYSTEM, ("turn.started",)),
    EventSpec("routing.policy_invalid", RoutingPolicyInvalidPayload, _PSEUDO, _SYSTEM, audit=True),
    EventSpec(
        "routing.provider_unavailable",
        RoutingProviderUnavailablePayload,
        _PSEUDO,
        _SYSTEM,
        ("llm.call_failed",),
    ),
    EventSpec("routing.provider_recovered", RoutingProviderRecoveredPayload, _PSEUDO, _SYSTEM),
    EventSpec("routing.constraint_failure", RoutingConstraintFailurePayload, _PSEUDO, _SYSTEM),
)
