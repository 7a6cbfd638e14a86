"""Payloads of the tool domain (spec §6.4): calls, outcomes, invalid input, confirmations.

Tool inputs and outputs live in the canonical ToolUse/ToolResult blocks; events carry hashes,
sizes and side-effect details only. The streaming `tool.use_*` names are not catalog types.
"""

from __future__ import annotations

from typing import Literal

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import NonNegativeInt, PayloadModel, UtcDatetime

SideEffects = Literal["none", "read", "write", "execute", "network"]
ToolErrorClass = Literal[
    "timeout", "permission_denied", "not_found", "validation_error", "execution_error",
    "cancelled", "user_denied", "confirmation_timeout",
]  # fmt: skip


class ToolCalledPayload(PayloadModel):
    """The model asked for a tool; the dispatcher accepted the call."""

    tool_use_id: str
    tool_name: str
    input_hash: str
    input_size_bytes: NonNegativeInt
    side_effects: SideEffects


class ToolCompletedPayload(PayloadModel):
    """A tool call ran to the end (successfully or with a tool-reported failure)."""

    tool_use_id: str
    success: bool
    output_size_bytes: NonNegativeInt
    latency_ms: NonNegativeInt
    files_modified: list[str] | None = None
    command_executed: str | None = None


class ToolFailedPayload(PayloadModel):
    """A tool call could not run or was stopped."""

    tool_use_id: str
    error_class: ToolErrorClass
    error_message: str
    latency_ms: NonNegativeInt


class ToolInputInvalidPayload(PayloadModel):
    """A tool_use input failed JSON Schema validation against the tool's schema."""

    tool_name: str
    validation_errors: list[str]


class ToolConfirmationRequestedPayload(PayloadModel):
    """A side-effecting tool is paused until the user allows or denies it."""

    tool_use_id: str
    tool_name: str
    side_effects: Literal["write", "execute", "network"]
    confirmation_request_id: str
    input_summary: str
    projected_modifications: list[str] | None = None
    command_summary: str | None = None
    expires_at: UtcDatetime


class ToolConfirmationResolvedPayload(PayloadModel):
    """The user answered a confirmation request, a policy did (actor system), or it timed out."""

    tool_use_id: str
    confirmation_request_id: str
    decision: Literal["allow", "deny", "timeout"]
    scope: Literal["once", "session"] | None = None
    responding_client_attach_token: str | None = None


SPECS = (
    EventSpec("tool.called", ToolCalledPayload, Sensitivity.PRIVATE, (Actor.AGENT,), ("llm.call_completed",)),
    EventSpec("tool.completed", ToolCompletedPayload, Sensitivity.PRIVATE, (Actor.TOOL,), ("tool.called",)),
    EventSpec("tool.failed", ToolFailedPayload, Sensitivity.PRIVATE, (Actor.TOOL,), ("tool.called",)),
    EventSpec(
        "tool.input_invalid",
        ToolInputInvalidPayload,
        Sensitivity.PSEUDONYMOUS,
        (Actor.SYSTEM,),
        ("llm.call_completed",),
    ),
    EventSpec(
        "tool.confirmation_requested",
        ToolConfirmationRequestedPayload,
        Sensitivity.PRIVATE,
        (Actor.SYSTEM,),
        ("tool.called",),
    ),
    EventSpec(
        "tool.confirmation_resolved",
        ToolConfirmationResolvedPayload,
        Sensitivity.PRIVATE,
        (Actor.USER, Actor.SYSTEM),  # SYSTEM: a policy answered (nobody could be asked)
        ("tool.confirmation_requested",),
        audit=True,
    ),
)
