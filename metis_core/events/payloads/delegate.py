"""Payloads of the delegate domain (spec §6.8): a planner handed a task to a worker session,
which completed or failed.

Worker spend is a Decimal string; the worker's own events live under its own session id.
"""

from __future__ import annotations

from typing import Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import DecimalString, NonNegativeFloat, NonNegativeInt, PayloadModel


class DelegateStartedPayload(PayloadModel):
    """A delegate() call created a worker session."""

    tool_use_id: str
    worker_session_id: str
    tier: Literal["fast", "balanced", "deep"]
    resolved_model: str
    context_mode: Literal["minimal", "explicit"]
    context_reference_count: NonNegativeInt
    task_size_tokens: NonNegativeInt
    allowed_tool_count: NonNegativeInt
    dropped_tools: list[str]


class DelegateCompletedPayload(PayloadModel):
    """The worker session finished and returned its output to the planner."""

    tool_use_id: str
    worker_session_id: str
    success: bool
    output_size_bytes: NonNegativeInt
    worker_total_cost_usd: DecimalString
    pricing_version: str
    turn_count: NonNegativeInt
    llm_call_count: NonNegativeInt
    tool_call_count: NonNegativeInt
    wall_time_seconds: NonNegativeFloat
    model: str


class DelegateFailedPayload(PayloadModel):
    """The delegation failed, before or after the worker session existed."""

    tool_use_id: str
    worker_session_id: str | None = None
    failure_mode: Literal[
        "worker_error", "max_tokens_exceeded", "insufficient_context",
        "output_schema_validation_failed", "no_model_available_for_tier", "cancelled_by_user",
    ]  # fmt: skip
    error_message: str
    worker_total_cost_usd: DecimalString
    pricing_version: str


_PSEUDO = Sensitivity.PSEUDONYMOUS
_SYSTEM = (Actor.SYSTEM,)
SPECS = (
    EventSpec("delegate.started", DelegateStartedPayload, _PSEUDO, _SYSTEM, ("llm.call_completed",), phase="4"),
    EventSpec("delegate.completed", DelegateCompletedPayload, _PSEUDO, _SYSTEM, ("delegate.started",), phase="4"),
    EventSpec(
        "delegate.failed",
        DelegateFailedPayload,
        _PSEUDO,
        _SYSTEM,
        ("delegate.started", "llm.call_completed"),
        phase="4",
    ),
)
