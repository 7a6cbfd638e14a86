"""The pattern slot's answer: among the k nearest fingerprints, the model with the best score
per dollar that is nearly as good as the best one, when the evidence clears the confidence floor.

Per model over the neighbours' scored outcomes, weighted by closeness and decayed with age
(evidence.py): mean score, its standard error (over the effective sample size), mean cost.
Eligible: at least `min_samples` outcomes, a mean of at least `success_floor`; besides the model with
the best posterior mean, only one with `switch_evidence` effective outcomes and a mean that could be within
`score_tolerance` of the best (mean + one standard error), so a few early failures do not shut a
cheap model out for good, nor do a few lucky turns hand it a kind it trails on. The best score per
dollar wins. Confidence = n / (n + 2) × (1 − mean distance).
When exploring is allowed, an `Explorer` may send the turn to a cheaper model with little
evidence instead (exploration.py); the recommendation then says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from metis_core.learning.patterns.evidence import ModelEvidence, Regime, regime_began, tally
from metis_core.learning.patterns.exploration import Explorer
from metis_core.learning.patterns.fingerprint import Embedder, fingerprint
from metis_core.learning.patterns.store import Outcome, PatternStore, _now_us
from metis_core.learning.settings import PatternSettings
from metis_core.routing.engine import TurnNeeds
from metis_core.routing.pattern_slot import FingerprintKind, PatternRecommendation, ScoredModel

COST_FLOOR_USD = 1e-6
"""Free (local or unpriced) models compare as costing this much, so score per dollar stays finite."""
TIE = 1e-3
"""Posterior means this close are a tie (outcomes recorded seconds apart decay by a hair differently)."""


@dataclass(frozen=True)
class Neighbourhood:
    nearest_id: str | None
    """The nearest stored fingerprint (the turn's own, if it was seen before); None without neighbours."""
    size: int
    tallies: dict[str, ModelEvidence]
    kind: FingerprintKind = "structural"
    """The turn's own fingerprint kind (hybrid when it was embedded)."""


class PatternAdvisor:
    def __init__(self, store: PatternStore, settings: PatternSettings | None = None,
                 embed: Embedder | None = None, explorer: Explorer | None = None) -> None:
        self.store = store
        self.settings = settings or store.settings
        self.embed = embed
        self.explorer = explorer
        self._family_of: dict[str, str] = {}
        self._holders: dict[str, str] = {}
        """Per nearest fingerprint, the model this advisor last recommended there on the evidence (not
        exploring): it holds those turns until the evidence against it clears `hold_confidence`."""

    def evidence(self, needs: TurnNeeds, now_us: int | None = None) -> Neighbourhood:
        """The neighbouring fingerprints of turns like this one and each model's evidence on them."""
        s = self.settings
        fp = fingerprint(needs.user_text, estimated_tokens=needs.estimated_input_tokens, has_images=needs.has_images,
                         workspace=needs.workspace, tools_used=needs.tools_in_history, embed=self.embed)
        near = self.store.neighbors(fp, s.k, s.max_distance)
        kind: FingerprintKind = "hybrid" if fp.embedding is not None else "structural"
        if not near:
            return Neighbourhood(None, 0, {}, kind)
        closeness = {stored.id: dist for stored, dist in near}
        return Neighbourhood(near[0][0].id, len(near),
                             self.tally(self.store.outcomes(list(closeness)), closeness, now_us), kind)

    def tally(self, outcomes: list[Outcome], closeness: dict[str, float], now_us: int | None = None,
              ) -> dict[str, ModelEvidence]:
        """Each model's evidence on these outcomes, from when its current regime began (a change seen
        on its latest outcomes on all turns, or on these alone)."""
        s = self.settings
        regimes: dict[str, Regime] = {}
        if s.recent_outcomes and s.change_threshold:
            for model in sorted({o.model for o in outcomes}):
                latest = self.store.latest_outcomes(model, s.recent_outcomes)
                regime = regime_began(latest, s, self.families({o.fingerprint_id for o in latest}))
                if regime is not None:
                    regimes[model] = regime
        return tally(outcomes, closeness, s, now_us or _now_us(), regimes)

    def families(self, fingerprint_ids: set[str]) -> dict[str, str]:
        """Each stored fingerprint's family (its leading verb), read again only when one of
        `fingerprint_ids` is new to it: a stored fingerprint's features never change."""
        if not fingerprint_ids <= self._family_of.keys():
            for stored in self.store.fingerprints():
                self._family_of[stored.id] = str(stored.fingerprint.features.get("lead", ""))
        return self._family_of

    def recommend(self, needs: TurnNeeds, *, explore: bool = True) -> PatternRecommendation | None:
        s = self.settings
        hood = self.evidence(needs)
        nearest, tallies = hood.nearest_id, hood.tallies
        if nearest is None:
            return None
        kind = hood.kind
        scored = [ScoredModel(m, t.mean, t.count, t.mean_cost) for m, t in tallies.items()]
        scored.sort(key=lambda m: (-m.score, m.mean_cost_usd, m.model))
        pick = self.choose(tallies, holder=self._holders.get(nearest))
        if explore and self.explorer is not None:
            reference = pick.model if pick is not None else _best_known(tallies)
            tried = self.explorer.consider(tallies, reference, s.score_tolerance, s.half_life_outcomes)
            if tried is not None:
                mine = tallies.get(tried.model, ModelEvidence(tried.model))
                confidence = mine.count / (mine.count + 2) * (1.0 - mine.mean_distance)
                return PatternRecommendation(
                    model=tried.model, confidence=round(confidence, 4), fingerprint_id=nearest,
                    fingerprint_kind=kind, sample_size=mine.count, k_cluster_size=hood.size,
                    alternatives=tuple(scored), exploration=tried.why)
        if pick is None:
            return None
        confidence = pick.count / (pick.count + 2) * (1.0 - pick.mean_distance)
        if confidence < s.confidence_floor:
            return None
        self._holders[nearest] = pick.model
        return PatternRecommendation(
            model=pick.model, confidence=round(confidence, 4), fingerprint_id=nearest, fingerprint_kind=kind,
            sample_size=pick.count, k_cluster_size=hood.size, alternatives=tuple(scored),
        )

    def choose(self, tallies: dict[str, ModelEvidence], holder: str | None = None) -> ModelEvidence | None:
        """The model the evidence picks (no confidence floor, no exploration), or None. `holder`: the
        model routing chose here last, which stays eligible until it is probably worse (`holds`)."""
        s = self.settings
        eligible = [t for t in tallies.values() if t.count >= s.min_samples and t.mean >= s.success_floor]
        if not eligible:
            return None
        best = max(t.mean for t in eligible)
        surest = max(t.posterior_mean for t in eligible)  # the posterior weighs the mean by its evidence
        eligible = [t for t in eligible if t.posterior_mean >= surest - TIE or (
            t.evidence >= s.switch_evidence and t.mean + t.standard_error >= best - s.score_tolerance) or (
            t.model == holder and holds(t, eligible, s.score_tolerance, s.hold_confidence))]
        return max(eligible, key=lambda t: (t.mean / max(t.mean_cost, COST_FLOOR_USD), t.mean, t.model))


def holds(holder: ModelEvidence, others: list[ModelEvidence], tolerance: float, confidence: float) -> bool:
    """Whether the model holding a kind of turn keeps it against the others: unless, for one of them,
    the posterior probability that the holder's success rate trails that model's by more than
    `tolerance` reaches `confidence` (both Beta posteriors, normal approximation of their difference).
    Taking a route needs a mean within the tolerance; losing it needs evidence of a gap, so a chance
    failure or two among a holder's latest outcomes does not move it."""
    return not any(probably(holder.trails(other, tolerance), confidence)
                   for other in others if other.model != holder.model)


def probably(chance: float, confidence: float) -> bool:
    """Whether a posterior probability reaches `confidence` (0 = hysteresis off: anything does)."""
    return not confidence or chance >= confidence


def _best_known(tallies: dict[str, ModelEvidence]) -> str | None:
    """The reference when nothing is eligible yet: the model with the most evidence."""
    return max(tallies.values(), key=lambda t: (t.evidence, t.mean, t.model)).model if tallies else None
