"""Payloads of the llm domain (spec §6.3): one provider call started, completed or failed, and the
system prompt composed for it (llm.prompt_composed, designed here: docs/event-bus.md).

`cost_usd` on llm.call_completed is a float because the spec says so (unlike the Decimal
strings elsewhere); `error_class` on llm.call_failed is the eight-value ErrorClass enum.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import (
    InboundShape,
    NonNegativeFloat,
    NonNegativeInt,
    PayloadModel,
    StopReason,
)

LlmErrorClass = Literal[
    "rate_limit", "auth", "server_error", "network", "context_overflow", "invalid_request",
    "cancelled", "other",
]  # fmt: skip
"""Mirrors `metis_core.errors.ErrorClass`; a test keeps the two in step."""


class RecordedOutput(PayloadModel):
    """A structured turn's requested answer shape and its retry policy (docs/structured-output.md)."""

    name: str
    json_schema: dict[str, Any]
    description: str = ""
    max_retries: NonNegativeInt
    max_truncation_retries: NonNegativeInt
    nl_to_format: bool
    recover: bool


class RequestOptions(PayloadModel):
    """What a call was asked besides its messages, as the caller asked it: the AdapterOptions that
    shape the answer (never model, session or stream), the names of the tools offered, and a
    structured turn's output. Never a secret: provider-only knobs (`extra`, `provider_tools`) are
    named in `omitted`, not kept, and settings under secret-like names are dropped the same way."""

    max_tokens: NonNegativeInt | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    thinking_budget_tokens: NonNegativeInt | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    hosted_tools: dict[str, dict[str, Any]] | None = None
    tools: list[str] | None = None
    """Names of the client tools the call offered (their definitions live in the tool registry)."""
    output: RecordedOutput | None = None
    omitted: list[str] = Field(default_factory=list)
    """What the call had that is not kept here (`extra`, `provider_tools`, a secret-like setting)."""


class LlmCallStartedPayload(PayloadModel):
    """A request is about to go to a provider."""

    model: str
    provider: str
    estimated_input_tokens: NonNegativeInt
    request_id: str
    is_worker: bool
    request_options: RequestOptions | None = None
    """Additive (docs/event-bus.md): what `metis replay` re-sends; None on calls recorded before it
    was kept and on gateway calls."""


class LlmCallCompletedPayload(PayloadModel):
    """A provider call returned a complete response, with usage and cost."""

    model: str
    provider: str
    input_tokens: NonNegativeInt
    output_tokens: NonNegativeInt
    cached_input_tokens: NonNegativeInt
    cache_creation_input_tokens: NonNegativeInt
    cost_usd: NonNegativeFloat
    pricing_version: str
    latency_ms: NonNegativeInt
    stop_reason: StopReason
    produced_tool_calls: NonNegativeInt
    produced_thinking_blocks: NonNegativeInt
    gateway_key_id: str | None = None
    inbound_shape: InboundShape | None = None
    user_id: str | None = None
    team_id: str | None = None


class LlmCallFailedPayload(PayloadModel):
    """A provider call failed after the adapter's retries."""

    model: str
    provider: str
    error_class: LlmErrorClass
    error_message_redacted: str
    retry_count: NonNegativeInt
    latency_ms: NonNegativeInt


Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class PromptPartRecord(PayloadModel):
    """One part of a composed prompt: where it came from and its hash, never its text."""

    kind: Literal["system", "template", "memory", "skill", "tool_output", "fetched"]
    ref: str | None
    """`prompt:<id>[@<version>]` for templates and other named parts."""
    version: str | None
    hash: Sha256Hex
    size_chars: NonNegativeInt
    trusted: bool
    """False for tool output and fetched text: wrapped in <UNTRUSTED> markers in the prompt."""


class LlmPromptComposedPayload(PayloadModel):
    """The system prompt assembled for one model call (once per call, not per fallback attempt)."""

    kind: Literal["system+user", "system-only", "user-only"]
    hash: Sha256Hex
    """SHA-256 of the composed text as sent, markers included."""
    content_trust: Literal["trusted", "untrusted"]
    parts: list[PromptPartRecord] = Field(min_length=1)
    variable_hashes: dict[str, Sha256Hex]
    """`<template id>.<variable>` -> SHA-256 of the bound value."""


SPECS: tuple[EventSpec, ...] = (
    EventSpec(
        "llm.call_started",
        LlmCallStartedPayload,
        Sensitivity.PRIVATE,
        (Actor.AGENT,),
        ("turn.started", "tool.completed", "route.decided", "route.overridden"),
    ),
    EventSpec(
        "llm.call_completed",
        LlmCallCompletedPayload,
        Sensitivity.PSEUDONYMOUS,
        (Actor.AGENT,),
        ("llm.call_started",),
    ),
    EventSpec(
        "llm.prompt_composed",
        LlmPromptComposedPayload,
        Sensitivity.PSEUDONYMOUS,
        (Actor.AGENT,),
        ("llm.call_started",),
    ),
    EventSpec(
        "llm.call_failed",
        LlmCallFailedPayload,
        Sensitivity.PSEUDONYMOUS,
        (Actor.AGENT,),
        ("llm.call_started",),
    ),
)
