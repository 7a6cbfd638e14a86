"""The pattern slot's answer: among the k nearest fingerprints, the model with the best score
per dollar that is nearly as good as the best one, when the evidence clears the confidence floor.

Per model over the neighbours' scored outcomes (weighted by closeness): mean score, its standard
error, mean cost, sample size. Eligible: at least `min_samples` outcomes, a mean score of at least
`success_floor`, and a mean that could be within `score_tolerance` of the best model's (mean +
one standard error), so a few early failures do not shut a cheap model out for good; routing
keeps recording what it chose, so a model that keeps failing falls below the bar. The best score
per dollar wins. Confidence = n / (n + 2) × (1 − mean distance of its outcomes).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from metis_core.learning.patterns.fingerprint import Embedder, fingerprint
from metis_core.learning.patterns.store import PatternStore
from metis_core.learning.settings import PatternSettings
from metis_core.routing.engine import TurnNeeds
from metis_core.routing.pattern_slot import PatternRecommendation, ScoredModel

COST_FLOOR_USD = 1e-6
"""Free (local or unpriced) models compare as costing this much, so score per dollar stays finite."""


@dataclass
class _Tally:
    weight: float = 0.0
    score: float = 0.0
    squares: float = 0.0
    cost: float = 0.0
    distance: float = 0.0
    count: int = 0


class PatternAdvisor:
    def __init__(self, store: PatternStore, settings: PatternSettings | None = None,
                 embed: Embedder | None = None) -> None:
        self.store = store
        self.settings = settings or store.settings
        self.embed = embed

    def recommend(self, needs: TurnNeeds) -> PatternRecommendation | None:
        s = self.settings
        fp = fingerprint(needs.user_text, estimated_tokens=needs.estimated_input_tokens, has_images=needs.has_images,
                         workspace=needs.workspace, tools_used=needs.tools_in_history, embed=self.embed)
        near = self.store.neighbors(fp, s.k, s.max_distance)
        if not near:
            return None
        closeness = {stored.id: dist for stored, dist in near}
        tallies: dict[str, _Tally] = defaultdict(_Tally)
        for outcome in self.store.outcomes(list(closeness)):
            if outcome.score is None:
                continue
            dist = closeness[outcome.fingerprint_id]
            weight = 1.0 - dist
            tally = tallies[outcome.model]
            tally.weight += weight
            tally.score += weight * outcome.score
            tally.squares += weight * outcome.score * outcome.score
            tally.cost += weight * float(outcome.cost_usd)
            tally.distance += dist
            tally.count += 1
        scored = [ScoredModel(model, t.score / t.weight, t.count, t.cost / t.weight)
                  for model, t in tallies.items() if t.weight > 0]
        scored.sort(key=lambda m: (-m.score, m.mean_cost_usd, m.model))
        eligible = [m for m in scored if m.sample_size >= s.min_samples and m.score >= s.success_floor]
        if not eligible:
            return None
        best = max(m.score for m in eligible)
        eligible = [m for m in eligible if m.score + _standard_error(tallies[m.model]) >= best - s.score_tolerance]
        pick = max(eligible, key=lambda m: (m.score / max(m.mean_cost_usd, COST_FLOOR_USD), m.score))
        tally = tallies[pick.model]
        confidence = pick.sample_size / (pick.sample_size + 2) * (1.0 - tally.distance / tally.count)
        if confidence < s.confidence_floor:
            return None
        return PatternRecommendation(
            model=pick.model, confidence=round(confidence, 4), fingerprint_id=near[0][0].id,
            fingerprint_kind="hybrid" if fp.embedding is not None else "structural",
            sample_size=pick.sample_size, k_cluster_size=len(near), alternatives=tuple(scored),
        )


def _standard_error(tally: _Tally) -> float:
    mean = tally.score / tally.weight
    variance = max(0.0, tally.squares / tally.weight - mean * mean)
    return math.sqrt(variance / tally.count)
