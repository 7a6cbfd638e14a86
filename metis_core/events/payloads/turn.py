"""Payloads of the turn domain (spec §6.2): started, completed, cancelled.

turn.started is the one opt-in event here: when the user shares traces, the redacted message
text is included and the recording moves from private to user_controlled (§4.4.1).
"""

from __future__ import annotations

from typing import Any, Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import NonNegativeFloat, NonNegativeInt, PayloadModel, TurnStopReason


class TurnStartedPayload(PayloadModel):
    """The user sent a message; the text itself lives in the session store, not here."""

    user_message_hash: str
    user_message_text_redacted: str | None = None
    estimated_input_tokens: NonNegativeInt
    has_images: bool
    has_tool_calls_in_history: bool


class TurnCompletedPayload(PayloadModel):
    """The agent finished answering a turn."""

    stop_reason: TurnStopReason
    llm_call_count: NonNegativeInt
    tool_call_count: NonNegativeInt
    total_input_tokens: NonNegativeInt
    total_output_tokens: NonNegativeInt
    total_cost_usd: NonNegativeFloat
    wall_time_seconds: NonNegativeFloat
    signals_extra: dict[str, Any] | None = None
    user_id: str | None = None
    team_id: str | None = None


class TurnCancelledPayload(PayloadModel):
    """A turn stopped before completing."""

    reason: Literal["user_cancel", "client_disconnect", "timeout"]
    partial_llm_calls: NonNegativeInt
    partial_tool_calls: NonNegativeInt


def turn_started_sensitivity(payload: TurnStartedPayload) -> Sensitivity:
    """Private by default; user_controlled once the user opted in to sharing the redacted text."""
    if payload.user_message_text_redacted is not None:
        return Sensitivity.USER_CONTROLLED
    return Sensitivity.PRIVATE


SPECS = (
    EventSpec(
        "turn.started",
        TurnStartedPayload,
        Sensitivity.PRIVATE,
        (Actor.USER,),
        sensitivity_rule=turn_started_sensitivity,
    ),
    EventSpec("turn.completed", TurnCompletedPayload, Sensitivity.PSEUDONYMOUS, (Actor.AGENT,), ("turn.started",)),
    EventSpec("turn.cancelled", TurnCancelledPayload, Sensitivity.PSEUDONYMOUS, (Actor.USER,), ("turn.started",)),
)
