"""Each model's evidence on a turn's neighbourhood: decayed, closeness-weighted Beta counts.

An outcome's weight is its closeness (1 − distance) times its decay: halved every
`half_life_outcomes` newer outcomes of the same model in the neighbourhood and every
`half_life_days` of age; and when its last `change_window` scores differ from those before by more
than `change_margin` (a change point), only the last ones count. A model whose quality changes
therefore loses (or regains) its standing within a bounded number of its own turns, and evidence
no one refreshes fades back to the prior.
Scores in [0, 1] count as fractional successes: Beta(1 + Σ w·score, 1 + Σ w·(1 − score)).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from metis_core.learning.patterns.store import Outcome
from metis_core.learning.settings import PatternSettings

US_PER_DAY = 86_400 * 1_000_000


@dataclass
class ModelEvidence:
    """One model's decayed tally over the neighbouring fingerprints."""

    model: str
    weight: float = 0.0
    """Σ closeness × decay: what the mean and the posterior are weighted by."""
    evidence: float = 0.0
    """Σ decay: the effective number of outcomes (what min_samples and the standard error use)."""
    score: float = 0.0
    squares: float = 0.0
    cost: float = 0.0
    distance: float = 0.0
    count: int = 0
    """Raw outcomes, decayed or not."""
    learned: int = 0
    """Of which came from `metis learn` (replays of stored turns on this model)."""

    @property
    def mean(self) -> float:
        return self.score / self.weight if self.weight else 0.0

    @property
    def mean_cost(self) -> float:
        return self.cost / self.weight if self.weight else 0.0

    @property
    def mean_distance(self) -> float:
        return self.distance / self.weight if self.weight else 0.0

    @property
    def standard_error(self) -> float:
        if not self.weight or not self.evidence:
            return 1.0
        variance = max(0.0, self.squares / self.weight - self.mean * self.mean)
        return math.sqrt(variance / max(self.evidence, 1.0))

    @property
    def alpha(self) -> float:
        """Beta posterior (uniform prior): 1 + the effective successes."""
        return 1.0 + self.evidence * self.mean

    @property
    def beta(self) -> float:
        return 1.0 + self.evidence * (1.0 - self.mean)

    @property
    def posterior_mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    def interval(self, z: float = 1.645) -> tuple[float, float]:
        """A 90 % interval of the Beta posterior (normal approximation, clipped to [0, 1])."""
        a, b = self.alpha, self.beta
        mean = a / (a + b)
        spread = z * math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
        return max(0.0, mean - spread), min(1.0, mean + spread)


def decay(rank: int, age_us: int, settings: PatternSettings) -> float:
    """The weight left to an outcome with `rank` newer outcomes of its model and `age_us` of age."""
    by_rank = 0.5 ** (rank / settings.half_life_outcomes) if settings.half_life_outcomes else 1.0
    by_age = 0.5 ** (max(0, age_us) / US_PER_DAY / settings.half_life_days) if settings.half_life_days else 1.0
    return by_rank * by_age


def changed(newest_first: list[Outcome], settings: PatternSettings) -> bool:
    """A change point: the model's last `change_window` scores on these turns differ from all of its
    scores before them by more than `change_margin` (either way: a model got worse, or better)."""
    window = settings.change_window
    if not window or not settings.change_margin or len(newest_first) <= window:
        return False
    recent = [o.score or 0.0 for o in newest_first[:window]]
    before = [o.score or 0.0 for o in newest_first[window:]]
    # rounded: two failures in six against a clean record is a difference of 0.3 exactly, not a hair more
    return round(abs(sum(recent) / len(recent) - sum(before) / len(before)), 9) > settings.change_margin


def tally(outcomes: Iterable[Outcome], closeness: dict[str, float], settings: PatternSettings,
          now_us: int) -> dict[str, ModelEvidence]:
    """Per model, the decayed evidence of the scored outcomes (`closeness`: fingerprint id → distance)."""
    per_model: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.score is not None:
            per_model[outcome.model].append(outcome)
    tallies: dict[str, ModelEvidence] = {}
    for model, rows in per_model.items():
        evidence = ModelEvidence(model)
        newest_first = [o for _, o in sorted(enumerate(rows), key=lambda p: (p[1].recorded_at_us, p[0]), reverse=True)]
        if changed(newest_first, settings):
            newest_first = newest_first[: settings.change_window]  # what came before the change no longer counts
        for rank, outcome in enumerate(newest_first):
            assert outcome.score is not None
            dist = closeness[outcome.fingerprint_id]
            kept = decay(rank, now_us - outcome.recorded_at_us, settings)
            w = (1.0 - dist) * kept
            evidence.weight += w
            evidence.evidence += kept
            evidence.score += w * outcome.score
            evidence.squares += w * outcome.score * outcome.score
            evidence.cost += w * float(outcome.cost_usd)
            evidence.distance += w * dist
            evidence.count += 1
            evidence.learned += outcome.source == "learned"
        if evidence.weight > 0:
            tallies[model] = evidence
    return tallies
