"""Why a turn went to the model it did: its route.decided chain, the pattern it matched and the
evidence behind that pattern now (each model's decayed Beta posterior on the neighbourhood, and
how far a fall in its latest outcomes has built up).

Read-only: it reads the trace and the pattern store and changes nothing (`metis patterns explain`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from metis_core.learning.patterns.evidence import ModelEvidence

if TYPE_CHECKING:
    from metis_core.learning.loop import LearningLoop


@dataclass(frozen=True)
class ModelPosterior:
    model: str
    outcomes: int
    learned: int
    evidence: float
    alpha: float
    beta: float
    mean: float
    interval: tuple[float, float]
    mean_cost_usd: float

    @classmethod
    def of(cls, t: ModelEvidence) -> ModelPosterior:
        return cls(t.model, t.count, t.learned, round(t.evidence, 3), round(t.alpha, 3), round(t.beta, 3),
                   round(t.mean, 4), (round(t.interval()[0], 4), round(t.interval()[1], 4)), round(t.mean_cost, 6))


@dataclass(frozen=True)
class TurnExplanation:
    turn_id: str
    session_id: str
    chosen_model: str
    chain: list[dict[str, Any]]
    exploration: bool
    fingerprint_id: str | None
    """The turn's recorded fingerprint, else the nearest one the pattern slot matched."""
    features: dict[str, Any] | None
    neighbours: int
    posteriors: list[ModelPosterior]
    """Every model's evidence on the fingerprint's neighbourhood now, best mean first."""
    evidence_picks: str | None
    """The model the evidence would choose now (before confidence floor and exploration)."""
    fall_evidence: dict[str, float]
    """Per model, its fall statistic on its latest outcomes as a share of the change threshold:
    verification by replay starts at `learning.verification.suspicion`, a change is found at 1."""

    def to_json(self) -> dict[str, Any]:
        return {"turn_id": self.turn_id, "session_id": self.session_id, "chosen_model": self.chosen_model,
                "exploration": self.exploration, "chain": self.chain, "fingerprint_id": self.fingerprint_id,
                "features": self.features, "neighbours": self.neighbours, "evidence_picks": self.evidence_picks,
                "fall_evidence": self.fall_evidence,
                "posteriors": [{**p.__dict__, "interval": list(p.interval)} for p in self.posteriors]}


def routed_turns(loop: LearningLoop) -> list[str]:
    """Turn ids with a routing decision, newest first."""
    decided = loop.runtime.trace.events(types=("route.decided",))
    return [e.turn_id for e in reversed(decided) if e.turn_id]


def explain_turn(loop: LearningLoop, turn_id: str) -> TurnExplanation | None:
    """None when the trace holds no routing decision for `turn_id`."""
    trace = loop.runtime.trace
    decided = trace.events(turn_id=turn_id, types=("route.decided", "pattern.matched"))
    route = next((e for e in decided if e.type == "route.decided"), None)
    if route is None:
        return None
    matched = next((e for e in decided if e.type == "pattern.matched"), None)
    chain = list(route.payload["chain"])
    recorded = loop.patterns.outcomes_of_turn(turn_id)
    fingerprint_id = recorded[0].fingerprint_id if recorded else (
        str(matched.payload["fingerprint_id"]) if matched is not None else None)
    stored = loop.patterns.get(fingerprint_id) if fingerprint_id else None
    posteriors: list[ModelPosterior] = []
    picks = None
    neighbours = 0
    falls: dict[str, float] = {}
    if stored is not None:
        s = loop.settings.patterns
        near = loop.patterns.neighbors(stored.fingerprint, s.k, s.max_distance)
        neighbours = len(near)
        closeness = {fp.id: dist for fp, dist in near}
        tallies = loop.advisor.tally(loop.patterns.outcomes(list(closeness)), closeness)
        posteriors = [ModelPosterior.of(t) for t in sorted(tallies.values(), key=lambda t: (-t.mean, t.model))]
        chosen = loop.advisor.choose(tallies)
        picks = chosen.model if chosen is not None else None
        falls = {p.model: round(loop.verifier.fall_evidence(p.model), 3) for p in posteriors}
    return TurnExplanation(
        turn_id, route.session_id, str(route.payload["chosen_model"]), chain,
        any(v.get("exploration") for v in chain), fingerprint_id,
        stored.fingerprint.features if stored is not None else None, neighbours, posteriors, picks, falls)
