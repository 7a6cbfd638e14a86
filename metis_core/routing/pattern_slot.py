"""The question routing asks the learning layer: "what did best on turns like this one?"

`PatternAdvisor` is the one interface between the routing chain's `pattern` slot and whatever
remembers past outcomes (metis_core/learning/). Routing defines it and never imports an
implementation; without an advisor the slot answers not_applicable and routing works as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from metis_core.routing.engine import TurnNeeds

FingerprintKind = Literal["structural", "hybrid"]


@dataclass(frozen=True, slots=True)
class ScoredModel:
    """One model's record on the neighbouring fingerprints."""

    model: str
    score: float
    """Mean success score in [0, 1]."""
    sample_size: int
    mean_cost_usd: float


@dataclass(frozen=True, slots=True)
class ExplorationDraw:
    """Why a turn was sent to a model with little evidence: its Thompson draw against the reference's."""

    reference_model: str
    """The model the evidence would have chosen (or the best-known one)."""
    draw: float
    reference_draw: float
    evidence: float
    """The explored model's (decayed) evidence on turns like this one."""


@dataclass(frozen=True, slots=True)
class PatternRecommendation:
    """The model the pattern store recommends for a turn, with the evidence behind it."""

    model: str
    confidence: float
    fingerprint_id: str
    """The nearest stored fingerprint (the turn's own, if it was seen before)."""
    fingerprint_kind: FingerprintKind
    sample_size: int
    """Outcomes of `model` among the neighbours."""
    k_cluster_size: int
    """Neighbouring fingerprints found (at most k)."""
    alternatives: tuple[ScoredModel, ...] = ()
    """Every model scored on the neighbours, best first (the recommendation included)."""
    exploration: ExplorationDraw | None = None
    """Set when the recommendation explores (bounded by the exploration budget) rather than exploits."""


class PatternAdvisor(Protocol):
    def recommend(self, needs: TurnNeeds, *, explore: bool = True) -> PatternRecommendation | None:
        """A recommendation above the advisor's confidence floor, or None (too little history).
        `explore` False: the slot can only be deferred (a rule chose), so no exploration."""
        ...
