"""Bounded online exploration: Thompson sampling between the chosen model and cheaper ones.

For a turn whose neighbourhood has a reference model (the one the evidence chooses, else the
best-known one), each cheaper candidate with little evidence draws a success rate from its Beta
posterior over the turns users ran (`metis learn`'s judged replays left out); the reference draws
from its own. A candidate whose draw comes within
`score_tolerance` of the reference's is worth a try (the best draw wins). Exploration stays
within its budget: at most 1 + share × turns routed, and the estimated spend per UTC day, both
counted per process. Pinned turns never get here (the routing engine does not ask).
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from metis_core.learning.patterns.evidence import ModelEvidence, latest_evidence
from metis_core.learning.settings import ExplorationSettings
from metis_core.routing.pattern_slot import ExplorationDraw

CostRatio = Callable[[str, str], float | None]
"""(candidate, reference) → the candidate's price as a share of the reference's, None when unknown."""


@dataclass(frozen=True)
class Exploration:
    model: str
    estimated_cost_usd: float
    why: ExplorationDraw


class Explorer:
    def __init__(self, settings: ExplorationSettings, cost_ratio: CostRatio | None = None,
                 rng: random.Random | None = None) -> None:
        self.settings = settings
        self.cost_ratio = cost_ratio
        self.rng = rng or random.Random(settings.seed)
        self.routed = 0
        self.explored = 0
        self.spent_today = 0.0
        self._day = datetime.now(UTC).date()
        self._lock = threading.Lock()

    def consider(self, tallies: dict[str, ModelEvidence], reference: str | None, tolerance: float,
                 half_life_outcomes: float = 0.0) -> Exploration | None:
        """The model to explore on this turn, or None; counts the turn against the budget either way.
        `half_life_outcomes`: the decay of the tallies, which `until_evidence` is measured in."""
        with self._lock:
            self.routed += 1
            today = datetime.now(UTC).date()
            if today != self._day:
                self._day, self.spent_today = today, 0.0
            if not self.settings.enabled or reference is None or reference not in tallies:
                return None
            if self.explored + 1 > 1 + self.settings.share * self.routed:
                return None
            until = self.settings.until_evidence
            cap = latest_evidence(until, half_life_outcomes) if until is not None else math.inf
            pick = self._draw(tallies, tallies[reference], tolerance, cap)
            if pick is None or self.spent_today + pick.estimated_cost_usd > float(self.settings.usd_per_day):
                return None
            self.explored += 1
            self.spent_today += pick.estimated_cost_usd
            return pick

    def _draw(self, tallies: dict[str, ModelEvidence], ref: ModelEvidence, tolerance: float,
              cap: float) -> Exploration | None:
        reference_draw = self.rng.betavariate(ref.alpha, ref.beta)
        best: Exploration | None = None
        for model in sorted(set(tallies) | set(self.settings.candidates)):
            if model == ref.model:
                continue
            mine = tallies.get(model, ModelEvidence(model))
            if mine.evidence >= cap - 1e-9:
                continue
            cost = self._cost(mine, ref)
            if cost is None or cost >= ref.mean_cost:
                continue  # only cheaper models are explored
            # on the users' ratings alone: learned outcomes are a judge's verdicts, which route a kind until
            # users have rated the model there, but a judge that errs now and then rates a model that suits
            # the kind below what users do, and a draw on them would seldom try it to find out
            draw = self.rng.betavariate(1.0 + mine.observed_successes, 1.0 + mine.observed_failures)
            if draw + tolerance < reference_draw or (best is not None and draw <= best.why.draw):
                continue
            best = Exploration(model, cost, ExplorationDraw(ref.model, round(draw, 4), round(reference_draw, 4),
                                                            round(mine.evidence, 3)))
        return best

    def _cost(self, mine: ModelEvidence, ref: ModelEvidence) -> float | None:
        if mine.weight > 0:
            return mine.mean_cost
        ratio = self.cost_ratio(mine.model, ref.model) if self.cost_ratio is not None else None
        return None if ratio is None else ref.mean_cost * ratio
