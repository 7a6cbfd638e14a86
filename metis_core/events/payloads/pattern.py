"""Payloads of route.overridden and the pattern domain (spec §6.5b): user overrides and
dismissals of pattern recommendations, and the pattern store's record/match/evict events.

Counts, ids and confidences only; no conversation content.
"""

from __future__ import annotations

from typing import Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import (
    DecimalString,
    FingerprintKind,
    NonNegativeFloat,
    NonNegativeInt,
    PayloadModel,
    UnitInterval,
)


class RouteOverriddenPayload(PayloadModel):
    """The user applied a deferred pattern recommendation (`/route override`)."""

    original_chosen_model: str
    new_chosen_model: str
    deferred_policy: str
    rule_name: str | None = None
    pattern_confidence: UnitInterval


class PatternOverrideDismissedPayload(PayloadModel):
    """The user dismissed a pattern recommendation (`/route ignore`)."""

    chosen_model: str
    dismissed_pattern_model: str
    rule_name: str | None = None
    pattern_confidence: UnitInterval


class PatternRecordedPayload(PayloadModel):
    """One (fingerprint, primary_model) outcome written to the pattern store."""

    fingerprint_id: str
    fingerprint_kind: FingerprintKind
    primary_model: str
    sample_size_before: NonNegativeInt
    sample_size_after: NonNegativeInt
    was_new_fingerprint: bool
    success_score: UnitInterval | None = None
    cost_usd_at_record: DecimalString
    pricing_version: str
    over_soft_cap: bool


class PatternMatchedPayload(PayloadModel):
    """The pattern policy won routing for this turn."""

    fingerprint_id: str
    fingerprint_kind: FingerprintKind
    chosen_model: str
    confidence: UnitInterval
    sample_size: NonNegativeInt
    k_cluster_size: NonNegativeInt
    alternatives_count: NonNegativeInt


class PatternEvictedPayload(PayloadModel):
    """The pattern store crossed a cap, trimmed by age, or was cleared by the operator."""

    trigger: Literal["soft_cap_signal", "hard_cap_evict", "age_trim", "manual_clear"]
    fingerprints_before: NonNegativeInt
    fingerprints_after: NonNegativeInt
    outcomes_before: NonNegativeInt
    outcomes_after: NonNegativeInt
    entries_evicted: NonNegativeInt
    oldest_evicted_age_days: NonNegativeFloat | None = None


_PSEUDO = Sensitivity.PSEUDONYMOUS
_SYSTEM = (Actor.SYSTEM,)
SPECS = (
    EventSpec("route.overridden", RouteOverriddenPayload, _PSEUDO, (Actor.USER,), ("route.decided",), phase="3"),
    EventSpec(
        "pattern.override_dismissed",
        PatternOverrideDismissedPayload,
        _PSEUDO,
        (Actor.USER,),
        ("route.decided",),
        phase="3",
    ),
    EventSpec("pattern.recorded", PatternRecordedPayload, _PSEUDO, _SYSTEM, ("session.ended",), phase="2.5"),
    EventSpec("pattern.matched", PatternMatchedPayload, _PSEUDO, _SYSTEM, ("route.decided",), phase="2.5"),
    EventSpec(
        "pattern.evicted",
        PatternEvictedPayload,
        _PSEUDO,
        _SYSTEM,
        ("pattern.recorded",),
        phase="2.5",
        audit=True,
    ),
)
