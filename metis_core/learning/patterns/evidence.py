"""Each model's evidence on a turn's neighbourhood: decayed, closeness-weighted Beta counts.

An outcome's weight is its closeness (1 − distance) times its decay: halved every
`half_life_outcomes` newer outcomes of the same model in the neighbourhood and every
`half_life_days` of age. A change-point test (a two-sided CUSUM of each score against the
posterior of the model's scores before it) runs on the neighbourhood and on the model's latest
outcomes on all turns, where a falling test on the families of turns the model holds joins it;
past a change only the scores since count. A model whose quality changes therefore loses (or
regains) its standing within a few of its own turns, and evidence no one refreshes fades back to
the prior.
Scores in [0, 1] count as fractional successes: Beta(1 + Σ w·score, 1 + Σ w·(1 − score)).
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from metis_core.learning.patterns.store import Outcome
from metis_core.learning.settings import PatternSettings

US_PER_DAY = 86_400 * 1_000_000
DECIDED_Z = 2.326
"""A model is decidedly worse than another when even its 98 % interval's top trails it: `metis learn`
replays it no further there (wider than the 90 % shown, since a kind given up is rarely tried again)."""


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
    observed_successes: float = 0.0
    """Σ decay × score over the outcomes of turns users ran (not learned ones), decayed by the newer
    outcomes here of every model (a model routing stopped sending these turns to sees its ratings fade
    as they go by), plus the model's mean since a change found on all turns standing in as in `tally`:
    exploration draws from
    Beta(1 + these, 1 + `observed_failures`), the users' own ratings of the model here."""
    observed_failures: float = 0.0

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

    @property
    def posterior_variance(self) -> float:
        a, b = self.alpha, self.beta
        return a * b / ((a + b) ** 2 * (a + b + 1))

    def trails(self, other: ModelEvidence, tolerance: float) -> float:
        """The posterior probability that this model's success rate is below `other`'s less `tolerance`
        (both posteriors independent, normal approximation of their difference)."""
        spread = math.sqrt(self.posterior_variance + other.posterior_variance)
        return NormalDist().cdf((other.posterior_mean - tolerance - self.posterior_mean) / spread)

    def interval(self, z: float = 1.645) -> tuple[float, float]:
        """A 90 % interval of the Beta posterior (normal approximation, clipped to [0, 1])."""
        mean = self.posterior_mean
        spread = z * math.sqrt(self.posterior_variance)
        return max(0.0, mean - spread), min(1.0, mean + spread)


def decay(rank: int, age_us: int, settings: PatternSettings) -> float:
    """The weight left to an outcome with `rank` newer outcomes of its model and `age_us` of age."""
    by_rank = 0.5 ** (rank / settings.half_life_outcomes) if settings.half_life_outcomes else 1.0
    by_age = 0.5 ** (max(0, age_us) / US_PER_DAY / settings.half_life_days) if settings.half_life_days else 1.0
    return by_rank * by_age


def latest_evidence(outcomes: float, half_life_outcomes: float) -> float:
    """The evidence a model's latest `outcomes` outcomes on a kind carry after decay by count (the
    most any number carries is 1 / (1 − 2^(−1/half_life)): 14.9 at a half-life of 10)."""
    if not half_life_outcomes:
        return outcomes
    kept = math.pow(0.5, 1.0 / half_life_outcomes)
    return (1.0 - math.pow(kept, outcomes)) / (1.0 - kept)


def regime_start(stream: Sequence[tuple[str, float]], settings: PatternSettings, *,
                 held_falls_only: bool = False) -> int:
    """Where a model's current regime begins in `stream` (its scores oldest first, each with the
    group it belongs to: a fingerprint, or a family of them); 0 when no change was found.

    A two-sided Bernoulli CUSUM against the posterior of the regime so far: each score is weighed
    against its own group's mean over the regime before the current run of evidence (needing
    `change_baseline` of them), by the log-likelihood ratio of a success rate `change_margin`
    lower (or higher) against that mean. When the sum passes `change_threshold`, a change
    happened where the run began, and only the scores from there on form the new regime. A falling
    score counts against a threshold raised by `change_failure_scale` × its baseline's failure share:
    a kind that fails now and then needs a longer run of failures than one that never failed.
    `held_falls_only`: test falls only, and only on groups the model holds (a baseline mean of at
    least `success_floor`); the scores of the other groups join their baselines untested."""
    return _cusum(stream, settings, held_falls_only)[0]


def _cusum(stream: Sequence[tuple[str, float]], settings: PatternSettings,
           held_falls_only: bool) -> tuple[int, float]:
    """`regime_start`'s test: (where the regime begins, the falling sum at the end of `stream`)."""
    if not settings.change_threshold or not settings.change_margin:
        return 0, 0.0
    shifts = (-settings.change_margin,) if held_falls_only else (-settings.change_margin, settings.change_margin)
    sums: dict[str, list[tuple[int, float, int]]] = defaultdict(list)  # group → (index, Σ score, failures)
    for index, (group, score) in enumerate(stream):
        before = sums[group][-1] if sums[group] else (0, 0.0, 0)
        sums[group].append((index, before[1] + score, before[2] + (score < 0.5)))
    regime, runs, totals = 0, [0, 0], [0.0, 0.0]  # run starts and sums: [falling, rising]
    for index, (group, score) in enumerate(stream):
        for side, shift in enumerate(shifts):
            count, successes, failures = _baseline(sums[group], regime, runs[side])
            if held_falls_only and (1.0 + successes) / (2.0 + count) < settings.success_floor:
                count = 0  # a kind the model does not hold: nothing of it to lose
            if count < settings.change_baseline:  # too little to test against yet: this score joins the
                if totals[side] <= 0:  # baseline, unless a run is under way (pulling its start past this
                    runs[side] = index + 1  # score would put a change's first scores in other kinds' baselines)
                continue
            p0 = (1.0 + successes) / (2.0 + count)
            if not 0.0 < p0 + shift < 1.0:  # no room for a change of the margin this way: a 90 % kind
                if totals[side] <= 0:  # cannot rise by 0.35, and a lucky run there is no such change
                    runs[side] = index + 1
                continue
            p1 = p0 + shift
            llr = score * math.log(p1 / p0) + (1.0 - score) * math.log((1.0 - p1) / (1.0 - p0))
            # in units of this kind's threshold: a falling one grows with the failures its baseline holds
            scale = 1.0 + settings.change_failure_scale * failures / count if shift < 0 else 1.0
            totals[side] += llr / scale
            if totals[side] <= 0:
                totals[side], runs[side] = 0.0, index + 1
            elif totals[side] > settings.change_threshold:
                regime = runs[side]
                runs, totals = [index + 1, index + 1], [0.0, 0.0]
                break
    return regime, totals[0]


def _baseline(cumulative: list[tuple[int, float, int]], start: int, end: int) -> tuple[int, float, int]:
    """(count, Σ score, failures) of a group's scores with stream index in [start, end)."""
    lo = bisect.bisect_left(cumulative, start, key=lambda c: c[0])
    hi = bisect.bisect_left(cumulative, end, key=lambda c: c[0])
    if hi <= lo:
        return 0, 0.0, 0
    first = cumulative[lo - 1] if lo else (0, 0.0, 0)
    return hi - lo, cumulative[hi - 1][1] - first[1], cumulative[hi - 1][2] - first[2]


@dataclass(frozen=True)
class Regime:
    """A model's outcomes on all turns since a change found on them."""

    began_us: int
    outcomes: int
    mean: float


def model_regime_start(stream: Sequence[tuple[str, str, float]], settings: PatternSettings) -> int:
    """Where a model's current regime begins in its latest scores on all turns (`stream`: oldest
    first, each with its fingerprint and its family); 0 when no change was found.

    Two tests run, and the regime begins at the later change either finds. The first weighs each
    score against its own fingerprint's baseline, both ways. Spread over many fingerprints, most hold
    too few scores to test against, so a drop on every kind the model suits shows there only late.
    The second, the held test, pools the fingerprints of a family (no neighbourhood spans two) and
    looks for a fall on the families the model holds: a drop spread thinly over them adds up there,
    while kinds the model fails on anyway, and any rise, are left to the first test."""
    by_fingerprint = regime_start([(fp, score) for fp, _, score in stream], settings)
    held = regime_start([(family, score) for _, family, score in stream], settings, held_falls_only=True)
    return max(by_fingerprint, held)


def falling_evidence(stream: Sequence[tuple[str, str, float]], settings: PatternSettings) -> float:
    """How far a fall in a model's latest scores (`stream` as in `model_regime_start`) has built
    up: the larger falling sum of its two tests at the end of the stream (each restarts at a change
    it declares), as a share of `change_threshold` (1 declares a change; 0 = no sign of one)."""
    if not settings.change_threshold or not settings.change_margin:
        return 0.0
    by_fingerprint = _cusum([(fp, score) for fp, _, score in stream], settings, False)[1]
    held = _cusum([(family, score) for _, family, score in stream], settings, True)[1]
    return max(by_fingerprint, held) / settings.change_threshold


def regime_began(newest_first: Sequence[Outcome], settings: PatternSettings,
                 family_of: Mapping[str, str] | None = None) -> Regime | None:
    """When one model's current regime began, from its latest outcomes on all turns (newest first),
    and its outcomes since; None when no change was found. A change that shows on every kind at
    once (a new version, an outage of quality) is seen sooner across them all. `family_of`: each
    fingerprint id's family (its leading verb); a fingerprint missing from it is a family of its own."""
    oldest_first = [o for o in reversed(newest_first) if o.score is not None]
    families = family_of or {}
    start = model_regime_start([(o.fingerprint_id, families.get(o.fingerprint_id, o.fingerprint_id), o.score or 0.0)
                                for o in oldest_first], settings)
    if not 0 < start < len(oldest_first):
        return None
    since = [o.score or 0.0 for o in oldest_first[start:]]
    return Regime(oldest_first[start].recorded_at_us, len(since), sum(since) / len(since))


def tally(outcomes: Iterable[Outcome], closeness: dict[str, float], settings: PatternSettings,
          now_us: int, regimes: dict[str, Regime] | None = None) -> dict[str, ModelEvidence]:
    """Per model, the decayed evidence of the scored outcomes (`closeness`: fingerprint id → distance).
    `regimes`: per model, its current regime on all turns (`regime_began`); outcomes before it no
    longer count (nor do those before a change found on these turns alone), and its mean since then
    stands in for up to `change_baseline` outcomes here, so a few lucky turns on one kind do not win
    back a route the model lost on all of them."""
    per_model: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.score is not None:
            per_model[outcome.model].append(outcome)
    recorded = sorted(o.recorded_at_us for rows in per_model.values() for o in rows)
    tallies: dict[str, ModelEvidence] = {}
    for model, rows in per_model.items():
        evidence = ModelEvidence(model)
        regime = (regimes or {}).get(model)
        if regime is not None:
            rows = [o for o in rows if o.recorded_at_us >= regime.began_us]
        oldest_first = [o for _, o in sorted(enumerate(rows), key=lambda p: (p[1].recorded_at_us, p[0]))]
        oldest_first = oldest_first[regime_start([(o.fingerprint_id, o.score or 0.0) for o in oldest_first],
                                                 settings):]
        newest_first = oldest_first[::-1]
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
            if outcome.source != "learned":  # faded by every newer outcome here, whichever model had it
                newer = len(recorded) - bisect.bisect_right(recorded, outcome.recorded_at_us)
                faded = decay(newer, now_us - outcome.recorded_at_us, settings)
                evidence.observed_successes += faded * outcome.score
                evidence.observed_failures += faded * (1.0 - outcome.score)
        if regime is not None and evidence.weight > 0:
            prior = float(min(regime.outcomes, settings.change_baseline))
            evidence.weight += prior
            evidence.evidence += prior
            evidence.score += prior * regime.mean
            evidence.squares += prior * regime.mean * regime.mean
            evidence.observed_successes += prior * regime.mean  # the model's record since its change
            evidence.observed_failures += prior * (1.0 - regime.mean)
        if evidence.weight > 0:
            tallies[model] = evidence
    return tallies
