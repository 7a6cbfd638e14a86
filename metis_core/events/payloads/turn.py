"""Payloads of the turn domain (spec §6.2): started, completed, cancelled, and replay_diverged.

turn.replay_diverged is designed in this repo (docs/record-replay.md): a turn re-run on another
model by `metis replay` differed from the recorded original; OpenWOP exports it as replay.diverged.

turn.started is the one opt-in event here: when the user shares traces, the redacted message
text is included and the recording moves from private to user_controlled (§4.4.1).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import (
    NonNegativeFloat,
    NonNegativeInt,
    PayloadModel,
    TurnStopReason,
    UnitInterval,
)


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


class TurnReplayDivergedPayload(PayloadModel):
    """A replayed turn first differed from its original here; names and keys only, never content."""

    source_session_id: str
    source_turn_id: str
    turn_index: Annotated[int, Field(ge=1)]
    """1-based user turn of the source session."""
    step: NonNegativeInt
    """0-based model call within the turn where the divergence shows."""
    divergence_kind: Literal["output", "missing", "extra", "type-mismatch"]
    """OpenWOP's kinds: differing output, an original action missing, an extra action, another shape."""
    divergence_point: Literal["tool_call", "text", "structured_output", "error", "refusal"]
    """`refusal`: one side refused to answer and the other did not (OpenWOP replay.divergedAtRefusal)."""
    original_model: str
    replay_model: str
    detail: str
    """Tool names and argument keys, similarity scores: never argument values or answer text."""
    text_similarity: UnitInterval | None = None
    original_sequence: NonNegativeInt | None = None
    """OpenWOP `sequence` of the original run's document the replay differs from, when it was found."""
    original_event_id: str | None = None
    """That document's `eventId` (the original event), when found."""


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
    EventSpec("turn.replay_diverged", TurnReplayDivergedPayload, Sensitivity.PSEUDONYMOUS, (Actor.SYSTEM,),
              ("turn.started",), phase="3"),
)
