"""Payloads of the eval domain (spec §6.12): an evaluator verdict started, completed or failed.

eval.completed is the second opt-in event: its floor is user_controlled (an LLM rationale the
user chose to capture); without `signals.rationale_redacted` it is recorded as pseudonymous.
"""

from __future__ import annotations

from typing import Any, Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import (
    DecimalString,
    EvalSubjectKind,
    JudgeKind,
    NonNegativeInt,
    PayloadModel,
    UnitInterval,
)

RATIONALE_SIGNAL = "rationale_redacted"
"""The opt-in key inside eval.completed `signals` that carries LLM-written text."""


class EvalStartedPayload(PayloadModel):
    """The evaluator began scoring a subject."""

    eval_id: str
    subject_kind: EvalSubjectKind
    subject_id: str
    rubric_id: str
    rubric_version: str
    judge_kind_planned: JudgeKind
    trigger: Literal["bus", "batch", "feedback_arrived", "benchmark"]


class EvalCompletedPayload(PayloadModel):
    """A verdict: score and confidence in [0, 1], with the judge's evidence in `signals`."""

    eval_id: str
    subject_kind: EvalSubjectKind
    subject_id: str
    score: UnitInterval
    confidence: UnitInterval
    judge_kind: JudgeKind
    judge_model: str | None = None
    judge_cost_usd: DecimalString
    judge_pricing_version: str | None = None
    judge_latency_ms: NonNegativeInt
    rubric_id: str
    rubric_version: str
    signals: dict[str, Any]
    parent_eval_id: str | None = None


class EvalFailedPayload(PayloadModel):
    """The judge could not produce a verdict."""

    eval_id: str
    subject_kind: EvalSubjectKind
    subject_id: str
    failure_mode: Literal[
        "judge_output_invalid", "judge_call_failed", "throttled_no_heuristic", "subject_not_found",
        "rubric_invalid",
    ]  # fmt: skip
    error_message: str
    judge_latency_ms: NonNegativeInt


def eval_completed_sensitivity(payload: EvalCompletedPayload) -> Sensitivity:
    """user_controlled when a redacted rationale is carried, pseudonymous otherwise (§4.4.1)."""
    if payload.signals.get(RATIONALE_SIGNAL) is not None:
        return Sensitivity.USER_CONTROLLED
    return Sensitivity.PSEUDONYMOUS


_EVAL_SUBJECTS = ("turn.completed", "tool.completed", "tool.failed", "session.ended", "feedback.explicit")
_SYSTEM = (Actor.SYSTEM,)
SPECS = (
    EventSpec("eval.started", EvalStartedPayload, Sensitivity.PSEUDONYMOUS, _SYSTEM, _EVAL_SUBJECTS, phase="3"),
    EventSpec(
        "eval.completed",
        EvalCompletedPayload,
        Sensitivity.USER_CONTROLLED,
        _SYSTEM,
        ("eval.started",),
        phase="3",
        sensitivity_rule=eval_completed_sensitivity,
    ),
    EventSpec("eval.failed", EvalFailedPayload, Sensitivity.PSEUDONYMOUS, _SYSTEM, ("eval.started",), phase="3"),
)
