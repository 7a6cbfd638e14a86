"""Delegation tiers: which model `fast`, `balanced` and `deep` mean, and which tools a worker gets.

A tier maps to a model id, alias or chain through `delegation.tiers` in config.yaml; an unmapped
tier is looked up as an alias of its own name (routing.yaml `aliases:` or the registry's). The
mapping is checked the way a turn is routed: the routing chain's delegate_request slot must be
the one that chooses, otherwise no model is available for the tier.
"""

from __future__ import annotations

from dataclasses import dataclass

from metis_core.agent.tools.base import Tool
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.agent_config import DelegationConfig
from metis_core.errors import MetisError, NoModelForTierError
from metis_core.routing.engine import RouteDecision, RoutingEngine, TurnNeeds

TIERS = ("fast", "balanced", "deep")
DELEGATE_TOOL_NAME = "delegate"
SESSION_BOUND_TOOLS = frozenset({DELEGATE_TOOL_NAME, "skill_load", "skill_search"})
"""Never a worker's: no recursive delegation, and a worker has no skills of its own."""


def tier_spec(config: DelegationConfig, tier: str) -> str:
    mapped: dict[str, str] = {str(name): spec for name, spec in config.tiers.items()}
    return mapped.get(tier, tier)


def resolve_tier(engine: RoutingEngine, config: DelegationConfig, tier: str, needs: TurnNeeds) -> RouteDecision:
    """The routing decision a worker on `tier` would get; NoModelForTierError if its slot cannot choose."""
    spec = tier_spec(config, tier)
    try:
        decision = engine.decide(needs, delegate=spec)
    except MetisError as error:
        raise NoModelForTierError(f"no model can take the {tier!r} tier ({spec}): {error}") from None
    slot = next(v for v in decision.chain if v.policy == "delegate_request")
    if slot.verdict != "chose":
        why = slot.reason if slot.verdict == "rejected" else "it names no model"
        raise NoModelForTierError(
            f"no model available for tier {tier!r} ({spec}): {why}; map it under delegation.tiers in config.yaml")
    return decision


@dataclass(frozen=True, slots=True)
class WorkerTools:
    registry: ToolRegistry
    dropped: list[str]
    """Tools the planner asked for that a worker may never have (or that do not exist)."""


def worker_tools(planner: ToolRegistry, config: DelegationConfig, requested: list[str] | None) -> WorkerTools:
    """The worker's tools: the planner's, minus the session-bound ones, within `worker_tools`."""
    permitted = [name for name in planner.names() if name not in SESSION_BOUND_TOOLS
                 and (config.worker_tools is None or name in config.worker_tools)]
    wanted = permitted if requested is None else list(dict.fromkeys(requested))
    kept: list[Tool] = []
    for name in wanted:
        tool = planner.get(name)
        if name in permitted and tool is not None:
            kept.append(tool)
    return WorkerTools(ToolRegistry(kept), [name for name in wanted if name not in permitted])
