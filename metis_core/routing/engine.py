"""The routing chain for one turn: which model answers, and why (route.decided).

Policies are tried in order — per-message `@model` override, sticky `/model` choice, rules,
pattern, delegate request, workspace default, global default — and every candidate is validated
against what the turn needs (images, tools, context size, system prompt, structured output,
health, a configured key). A rejected candidate is recorded with its validation_failure and the
next policy tried. The pattern slot asks a `PatternAdvisor` (pattern_slot.py) when one is given;
when a rule outranks its recommendation the slot records it as `deferred`. The
delegate_request slot chooses only inside a delegated worker session, from the worker's tier;
there the rule slot stands aside, so the planner's choice of tier is what decides.
"""

from __future__ import annotations

import fnmatch
import logging
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from metis_core.errors import AliasCycleError, MetisError, ModelIdError, UnknownModelError
from metis_core.messages import RoutingDecisionRecord, RoutingMode
from metis_core.models.registry import ModelRegistry
from metis_core.routing.health import HealthTracker
from metis_core.routing.pattern_slot import PatternAdvisor, PatternRecommendation
from metis_core.routing.policy_file import LoadedPolicy, MemberSettings, PolicyLoader, RuleMatch

log = logging.getLogger("metis_core.routing")

POLICY_MODES = {
    "per_message_override": RoutingMode.OVERRIDE,
    "manual_sticky": RoutingMode.MANUAL,
    "rule": RoutingMode.RULE,
    "pattern": RoutingMode.PATTERN,
    "delegate_request": RoutingMode.DELEGATE,
    "workspace_default": RoutingMode.DEFAULT,
    "global_default": RoutingMode.DEFAULT,
}


POLICY_LABELS = {
    "per_message_override": "@model", "manual_sticky": "the model chosen with /model or --model",
    "rule": "the routing rule's model", "pattern": "the learned pattern's model",
    "delegate_request": "the delegated model", "workspace_default": "the workspace default",
    "global_default": "the default model",
}  # fmt: skip
"""How a person reads each policy slot in an error message (the slot names stay in the trace)."""


class NoRoutableModelError(MetisError):
    """No policy produced a model that can carry this turn; `chain` says why each was rejected."""

    def __init__(self, chain: list[PolicyVerdict]) -> None:
        self.chain = chain
        reasons = "; ".join(f"{POLICY_LABELS.get(v.policy, v.policy)} {v.candidate_model or ''}: {v.reason}"
                            .replace(" :", ":") for v in chain if v.verdict == "rejected")
        hint = reasons or "no default model is configured (set defaults.model in config.yaml or use --model)"
        super().__init__(f"no model can take this turn: {hint}")


@dataclass(slots=True)
class TurnNeeds:
    has_images: bool = False
    has_tools: bool = False
    has_system_prompt: bool = False
    needs_structured_output: bool = False
    output_schema: dict[str, Any] | None = None
    """A structured answer's JSON Schema: a model must carry it in its registry mode (structured/plan.py)."""
    estimated_input_tokens: int = 0
    user_text: str = ""
    workspace: str = ""
    tools_in_history: tuple[str, ...] = ()
    """Names of the tools earlier turns of the session called (a pattern fingerprint feature)."""
    hosted_tools: tuple[str, ...] = ()
    """Provider-hosted tools the turn asks for (web_search, code_execution, ...)."""


@dataclass(slots=True)
class PolicyVerdict:
    policy: str
    verdict: str  # not_applicable | deferred | rejected | chose
    candidate_model: str | None
    reason: str
    rule_name: str | None = None
    confidence: float | None = None
    pattern_alternatives: list[dict[str, Any]] | None = None
    validation_failure: str | None = None
    exploration: bool | None = None
    """True when the pattern slot chose a model to explore it (a bounded try, not the evidence's pick)."""

    def to_payload(self) -> dict[str, Any]:
        payload = asdict(self)
        if self.exploration is None:
            del payload["exploration"]
        return payload


@dataclass(slots=True)
class RouteDecision:
    chosen_model: str
    members: list[str]
    """The chosen model first, then the fallbacks of its chain that also fit the turn."""
    winner_index: int
    chain: list[PolicyVerdict]
    elapsed_ms: float
    record: RoutingDecisionRecord
    settings: dict[str, MemberSettings] = field(default_factory=dict)
    pattern_match: PatternRecommendation | None = None
    """Set when the pattern slot chose the model (pattern.matched)."""
    deferred_pattern: PatternRecommendation | None = None
    """Set when a rule outranked the pattern slot's recommendation (the chat offers /route override)."""
    deferred_rule: str | None = None

    def payload(self) -> dict[str, Any]:
        """The route.decided payload."""
        return {
            "chosen_model": self.chosen_model,
            "winner_index": self.winner_index,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "chain": [v.to_payload() for v in self.chain],
        }


VALIDATION_FAILURE_FOR_CAPABILITY = {
    "supports_images": "no_vision_support",
    "supports_tools": "no_tool_support",
    "supports_system_prompt": "no_system_prompt_support",
    "supports_structured_output": "no_structured_output_support",
    "max_context_tokens": "exceeds_context_window",
}
"""check_fits' capability names -> the validation_failure values of route.decided and its kin."""


class RoutingEngine:
    def __init__(
        self,
        registry: ModelRegistry,
        *,
        loader: PolicyLoader | None = None,
        health: HealthTracker | None = None,
        global_default: str | None = None,
        is_configured: Callable[[str], bool] | None = None,
        advisor: PatternAdvisor | None = None,
    ) -> None:
        self.registry = registry
        self.advisor = advisor
        self.loader = loader
        self.health = health
        self.global_default = global_default
        self.is_configured = is_configured

    @property
    def policy(self) -> LoadedPolicy:
        return self.loader.policy if self.loader is not None else LoadedPolicy()

    # --- expansion and validation -----------------------------------------------------------

    def expand(self, spec: str, _stack: tuple[str, ...] = ()) -> list[str]:
        """Model ids for an id, alias or chain (policy names first, then the registry's)."""
        policy = self.policy
        members: list[str] = []
        for part in (p.strip() for p in spec.split(",")):
            if not part:
                continue
            if part in _stack:
                raise AliasCycleError([*_stack, part])
            if part in policy.chains():
                for member in policy.chains()[part]:
                    members += self.expand(member, (*_stack, part))
            elif part in policy.aliases():
                members += self.expand(policy.aliases()[part], (*_stack, part))
            else:
                members += self.registry.parse(part)
        return list(dict.fromkeys(members))

    @staticmethod
    def failure_for_capability(capability: str) -> str:
        """The route.* validation_failure naming a missing capability field (check_fits' vocabulary)."""
        return VALIDATION_FAILURE_FOR_CAPABILITY[capability]

    def validation_failure(self, model: str, needs: TurnNeeds) -> tuple[str, str] | None:
        """(validation_failure, reason) if `model` cannot take the turn, else None."""
        try:
            caps = self.registry.capabilities(model)
        except (UnknownModelError, ModelIdError) as exc:
            return "not_configured", str(exc)
        if needs.has_images and not caps.supports_images:
            return "no_vision_support", f"{model} cannot read images and the turn has images"
        if needs.has_tools and not caps.supports_tools:
            return "no_tool_support", f"{model} cannot call tools and the turn offers tools"
        if needs.has_system_prompt and not caps.supports_system_prompt:
            return "no_system_prompt_support", f"{model} takes no system prompt"
        if needs.needs_structured_output and not caps.supports_structured_output:
            return "no_structured_output_support", f"{model} cannot return structured output"
        if needs.output_schema is not None:
            from metis_core.structured.plan import carry_failure  # structured turns only

            why = carry_failure(needs.output_schema, caps, model)
            if why is not None:
                return "no_structured_output_support", why
        missing = [name for name in needs.hosted_tools if name not in caps.hosted_tools]
        if missing:
            offered = ", ".join(caps.hosted_tools) or "none"
            # the catalog's validation_failure set is closed: a hosted tool is a tool the model lacks
            return "no_tool_support", (
                f"{model} cannot run the hosted tool(s) {', '.join(missing)} the turn asks for (it offers: {offered})"
            )
        if needs.estimated_input_tokens > caps.max_context_tokens:
            return "exceeds_context_window", (
                f"~{needs.estimated_input_tokens} tokens exceed {model}'s {caps.max_context_tokens}-token window"
            )
        if self.health is not None and not self.health.is_available(model):
            return "provider_unavailable", f"{model} is benched after recent failures"
        if self.is_configured is not None and not self.is_configured(model):
            return "not_configured", f"no API key configured for {model.partition(':')[0]}"
        return None

    # --- the chain --------------------------------------------------------------------------

    def decide(
        self, needs: TurnNeeds, *, override: str | None = None, sticky: str | None = None,
        delegate: str | None = None,
    ) -> RouteDecision:
        """`delegate` is a worker session's tier model (id, alias or chain), None elsewhere."""
        started = time.perf_counter()
        policy = self.policy
        rule_hit = self._matching_rule(policy, needs) if delegate is None else None
        rule_model, rule_why, rule_name = (None, "", None)
        if rule_hit is not None:
            scope, rule = rule_hit
            rule_model, rule_why, rule_name = rule.model, f"{scope} rule {rule.name!r} matched", rule.name
        candidates: list[tuple[str, str | None, str, str | None]] = [
            ("per_message_override", override, "@model in the message", None),
            ("manual_sticky", sticky, "chosen with /model", None),
            ("rule", rule_model, rule_why, rule_name),
            ("pattern", None, "", None),
            ("delegate_request", delegate, "the worker's delegation tier", None),
            ("workspace_default", policy.workspace.default, "workspace default", None),
            ("global_default", policy.global_.default or self.global_default, "global default", None),
        ]
        chain: list[PolicyVerdict] = []
        decision: RouteDecision | None = None
        advice: PatternRecommendation | None = None
        for name, spec, why, slot_rule in candidates:
            if name == "pattern" and (decision is None or chain[decision.winner_index].policy == "rule"):
                advice = self._advice(needs, explore=decision is None)  # only when it can choose or be deferred
            if name == "pattern" and advice is not None:
                if decision is None:
                    spec, why = advice.model, _pattern_reason(advice)
                elif (chain[decision.winner_index].policy == "rule" and advice.model != decision.chosen_model
                      and advice.exploration is None):
                    chain.append(self._deferred(advice, decision, needs))
                    continue
            if decision is not None:
                chain.append(PolicyVerdict(name, "not_applicable", spec, "an earlier policy chose", slot_rule))
                continue
            if spec is None:
                reason = _not_applicable_reason(name)
                if name == "rule" and delegate is not None:
                    reason = "a delegated worker routes by its tier"
                if name == "pattern" and self.advisor is not None:
                    reason = "no confident pattern for turns like this yet"
                chain.append(PolicyVerdict(name, "not_applicable", None, reason, slot_rule))
                continue
            verdict, members = self._try(name, spec, why, slot_rule, needs)
            if name == "pattern" and advice is not None:
                verdict.confidence = advice.confidence
                verdict.pattern_alternatives = _alternatives(advice)
                verdict.exploration = advice.exploration is not None or None
            chain.append(verdict)
            if verdict.verdict == "chose":
                decision = RouteDecision(
                    chosen_model=members[0], members=members, winner_index=len(chain) - 1, chain=chain,
                    elapsed_ms=0.0,
                    record=RoutingDecisionRecord(
                        mode=POLICY_MODES[name], chosen_model=members[0], reason=verdict.reason, rule_name=slot_rule,
                        confidence=verdict.confidence,
                        alternatives_considered=[v.candidate_model for v in chain[:-1] if v.candidate_model],
                    ),
                    settings={m: s for m in members if (s := policy.settings_for(m)) is not None},
                    pattern_match=advice if name == "pattern" else None,
                )
        if decision is None:
            raise NoRoutableModelError(chain)
        decision.elapsed_ms = (time.perf_counter() - started) * 1000
        return decision

    def members_for(self, spec: str, needs: TurnNeeds) -> list[str]:
        """The members of `spec` that can take this turn (for a `/route override` re-dispatch);
        NoRoutableModelError when none can."""
        verdict, members = self._try("pattern", spec, "chosen with /route override", None, needs)
        if not members:
            raise NoRoutableModelError([verdict])
        return members

    def _advice(self, needs: TurnNeeds, *, explore: bool) -> PatternRecommendation | None:
        """The advisor's recommendation; an advisor that fails is logged and routing goes on without it."""
        if self.advisor is None:
            return None
        try:
            return self.advisor.recommend(needs, explore=explore)
        except Exception as error:  # the learning layer must never break a turn
            log.warning("pattern advisor failed; routing without it: %r", error)
            return None

    def _deferred(self, advice: PatternRecommendation, decision: RouteDecision, needs: TurnNeeds) -> PolicyVerdict:
        rule_name = decision.chain[decision.winner_index].rule_name
        failure = self.validation_failure(advice.model, needs)
        if failure is not None:
            return PolicyVerdict("pattern", "not_applicable", advice.model,
                                 f"an earlier policy chose (the pattern suggestion {advice.model} cannot take "
                                 f"this turn: {failure[1]})", confidence=advice.confidence)
        decision.deferred_pattern = advice
        decision.deferred_rule = rule_name
        return PolicyVerdict(
            "pattern", "deferred", advice.model,
            f"{_pattern_reason(advice)}; rule {rule_name!r} outranks it",
            confidence=advice.confidence, pattern_alternatives=_alternatives(advice),
        )

    def _try(
        self, name: str, spec: str, why: str, rule_name: str | None, needs: TurnNeeds
    ) -> tuple[PolicyVerdict, list[str]]:
        try:
            members = self.expand(spec)
        except (UnknownModelError, ModelIdError, AliasCycleError) as exc:
            return PolicyVerdict(name, "rejected", spec, str(exc), rule_name, validation_failure="not_configured"), []
        fitting: list[str] = []
        first_failure: tuple[str, str] | None = None
        for member in members:
            failure = self.validation_failure(member, needs)
            if failure is None:
                fitting.append(member)
            elif first_failure is None:
                first_failure = failure
        if not fitting:
            code, reason = first_failure or ("not_configured", f"{spec} names no model")
            return PolicyVerdict(name, "rejected", members[0] if members else spec, reason, rule_name,
                                 validation_failure=code), []
        return PolicyVerdict(name, "chose", fitting[0], why, rule_name), fitting

    @staticmethod
    def _matching_rule(policy: LoadedPolicy, needs: TurnNeeds) -> tuple[str, Any] | None:
        for scope, rule in policy.rules():
            if _matches(rule.when, needs):
                return scope, rule
        return None


def _pattern_reason(advice: PatternRecommendation) -> str:
    tried = advice.exploration
    if tried is not None:
        return (f"exploration: trying {advice.model} on turns like this ({tried.evidence:.1f} outcomes of evidence; "
                f"Thompson draw {tried.draw:.2f} against {tried.reference_draw:.2f} for {tried.reference_model})")
    return (f"pattern store: {advice.model} scored best per dollar on {advice.sample_size} similar turns "
            f"(confidence {advice.confidence:.2f})")


def _alternatives(advice: PatternRecommendation) -> list[dict[str, Any]]:
    return [{"model": a.model, "score": round(a.score, 4), "sample_size": a.sample_size} for a in advice.alternatives]


def _not_applicable_reason(policy: str) -> str:
    return {
        "per_message_override": "no @model in the message",
        "manual_sticky": "no /model choice in this session",
        "rule": "no rule matched",
        "pattern": "no pattern store configured",
        "delegate_request": "not a delegated worker session",
        "workspace_default": "no workspace default",
        "global_default": "no global default",
    }[policy]


def _matches(when: RuleMatch, needs: TurnNeeds) -> bool:
    checks = [
        when.has_images is None or when.has_images == needs.has_images,
        when.has_tools is None or when.has_tools == needs.has_tools,
        when.min_estimated_tokens is None or needs.estimated_input_tokens >= when.min_estimated_tokens,
        when.max_estimated_tokens is None or needs.estimated_input_tokens <= when.max_estimated_tokens,
        when.workspace is None or fnmatch.fnmatch(needs.workspace, when.workspace),
        when.keyword is None or when.keyword.lower() in needs.user_text.lower(),
        when.pattern is None or re.search(when.pattern, needs.user_text) is not None,
    ]
    return all(checks)
