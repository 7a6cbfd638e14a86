"""The `learning:` section of config.yaml: evaluator judge, spending cap, pattern-store limits.

Validated here (not in config.py) so the learning layer owns its knobs; a bad value is a
ConfigError naming the key. Every field has a default, so an empty section means "on, heuristic
judge only, no LLM spend". No section (the usual case) builds no schema: its defaults are constructed.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from metis_core.errors import ConfigError


class PatternSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first validation

    k: int = Field(default=8, ge=1, le=100)
    """Neighbouring fingerprints consulted per turn."""
    max_distance: float = Field(default=0.2, ge=0.0, le=1.0)
    """Fingerprints farther than this (0 = identical, 1 = nothing shared) are not neighbours."""
    confidence_floor: float = Field(default=0.6, ge=0.0, le=1.0)
    min_samples: int = Field(default=3, ge=1)
    """Outcomes a model needs among the neighbours before it can be recommended."""
    score_tolerance: float = Field(default=0.05, ge=0.0, le=1.0)
    """A model may trail the best mean score by this much and still win on price."""
    success_floor: float = Field(default=0.7, ge=0.0, le=1.0)
    """Below this mean score a model is never recommended, however cheap."""
    soft_cap_rows: int = Field(default=5_000, ge=1)
    hard_cap_rows: int = Field(default=10_000, ge=1)
    max_age_days: float = Field(default=180.0, gt=0)
    half_life_outcomes: float = Field(default=10.0, ge=0)
    """An outcome counts half as much after this many newer outcomes of its model on similar turns
    (0 = no decay by count), so a model whose quality changes loses or regains its routes quickly."""
    half_life_days: float = Field(default=30.0, ge=0)
    """... and half as much after this many days (0 = no decay by age)."""
    change_margin: float = Field(default=0.35, ge=0.0, le=1.0)
    """The change in a model's success rate the change-point test looks for (either way: a model got
    worse, or better); 0 = no test."""
    change_threshold: float = Field(default=4.0, ge=0.0)
    """Evidence (log-likelihood ratio) the test needs before it declares a change: higher is slower but
    fooled less often by a run of bad luck; 0 = no test. Past a change, only the scores since count."""
    change_failure_scale: float = Field(default=5.0, ge=0.0)
    """A falling change needs more evidence on a kind that fails now and then: the threshold grows by
    this times the share of failures (scores below 0.5) in the kind's baseline, so a 90 % kind (×1.5)
    does not flip on four failures in a row while a clean record (×1) does on three; 0 = a fixed threshold."""
    switch_evidence: float = Field(default=3.0, ge=0.0)
    """Effective outcomes a model needs on turns like this one before it may take their route from the
    model with the best posterior mean on price alone: below it, a few lucky turns of a model that trails by far
    look as good as a model that truly suits the kind; 0 = no minimum beyond min_samples."""
    hold_confidence: float = Field(default=0.95, ge=0.0, lt=1.0)
    """A model routing chose for turns like this one keeps them until the posterior probability that it
    trails another eligible model by more than `score_tolerance` reaches this (hysteresis: a chance
    failure or two does not move a route); 0 = the same test to keep a route as to take it."""
    change_baseline: int = Field(default=8, ge=1)
    """Scores of a model on a kind of turn before its later ones are tested against them."""
    recent_outcomes: int = Field(default=200, ge=0)
    """A model's latest outcomes on all turns that the test also reads (a change on every kind at once
    shows sooner there); 0 = per neighbourhood only."""

    @model_validator(mode="before")
    @classmethod
    def _no_window(cls, data: Any) -> Any:
        if isinstance(data, dict) and "change_window" in data:
            raise ValueError("change_window is no longer a setting: the change test weighs evidence instead of a "
                             "window; remove it, and tune change_threshold, change_baseline or recent_outcomes")
        return data


class ExplorationSettings(BaseModel):
    """Online exploration: now and then route a turn to a cheaper model with little evidence on
    turns like it (Thompson sampling on the pattern store's Beta posteriors), within a budget."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first validation

    share: float = Field(default=0.0, ge=0.0, le=1.0)
    """At most 1 + share × (turns routed) turns explored per process; 0 (the default) turns exploration
    off: a try spends a user's turn on a model that may answer worse, so it is opted into."""
    usd_per_day: Decimal = Field(default=Decimal("0.50"), ge=0)
    """At most this much estimated spend on explored turns per UTC day and process; 0 turns it off."""
    candidates: list[str] = Field(default_factory=list)
    """Models to try even before any evidence for them (models already in the store are tried too)."""
    until_evidence: float | None = Field(default=None, gt=0)
    """A model is not explored on turns like this one once its evidence there is what its latest this
    many outcomes carry after decay (`patterns.half_life_outcomes`: at 10, 20 outcomes carry 11.2 and
    no number more than 14.9, so a cap in raw outcomes would never be reached); None (the default):
    Thompson sampling alone decides, and a model clearly worse there is almost never drawn."""
    seed: int | None = None
    """Seed of the sampling (tests, benchmarks); None draws from the system."""

    @property
    def enabled(self) -> bool:
        return self.share > 0 and self.usd_per_day > 0


class VerificationSettings(BaseModel):
    """Verify by replay: when a model's fall statistic on the kinds it holds passes a share of the
    change threshold, replay a few of its recent stored turns on it (the LLM judge scoring them) so
    the change test gets evidence at the rate it needs."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first validation

    suspicion: float = Field(default=0.5, ge=0.0, le=1.0)
    """The share of `patterns.change_threshold` the fall statistic must reach before replays start:
    at 0.5, two failures close together on a kind with a clean record, three on one that fails one
    turn in ten; a single failure, which a kind that usually succeeds shows now and then, is not one."""
    usd_per_day: Decimal = Field(default=Decimal("0.10"), ge=0)
    """At most this much estimated spend (replay plus judge calls) per UTC day and process; 0 turns
    verification off."""
    replays: int = Field(default=6, ge=1, le=50)
    """Replays in a row while one suspicion stands, before waiting for the model's next observed turn."""
    judge_model: str | None = None
    """Canonical id of the judge scoring the replays; None = `learning.judge_model` (with neither,
    verification is off). Only the replays are judged by it, not every turn."""


class LearningSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built on first validation

    enabled: bool = True
    judge_model: str | None = None
    """Canonical id of the LLM judge; None = heuristic verdicts only."""
    judge_daily_cap_usd: Decimal = Field(default=Decimal("0.50"), ge=0)
    capture_rationale: bool = False
    """Opt-in: keep the LLM judge's (redacted) rationale in eval.completed (§4.4.1)."""
    embedding_model: str | None = None
    """PROVIDER:MODEL of an embedding model (openai, gemini, ollama or an openai_compatible provider):
    fingerprints become hybrid (structure + cosine distance of the message's embedding)."""
    patterns: PatternSettings = Field(default_factory=PatternSettings)
    exploration: ExplorationSettings = Field(default_factory=ExplorationSettings)
    verification: VerificationSettings = Field(default_factory=VerificationSettings)

    @classmethod
    def from_config(cls, section: dict[str, Any] | None) -> LearningSettings:
        if not section:  # every default, valid as declared: nothing to validate (`metis patterns list` reads it)
            return cls.model_construct(_fields_set=set(), patterns=PatternSettings.model_construct(),
                                       exploration=ExplorationSettings.model_construct(),
                                       verification=VerificationSettings.model_construct())
        try:
            settings = cls.model_validate(section or {})
        except ValidationError as error:
            problems = "; ".join(f"learning.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
            raise ConfigError(f"invalid learning settings in config.yaml: {problems}") from None
        if settings.patterns.hard_cap_rows < settings.patterns.soft_cap_rows:
            raise ConfigError("learning.patterns.hard_cap_rows must be at least soft_cap_rows")
        return settings
