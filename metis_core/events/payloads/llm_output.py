"""Payloads of the llm domain's structured-output steps (designed here, docs/structured-output.md).

One type per RFC 0032 step: a corrective or truncation retry, exhaustion, a refusal, a truncation,
the NL-to-format fallback and a lenient recovery. They carry validator messages, paths and byte
offsets, never the model's output; the exception is the provider's refusal text, so
llm.output_refused has the private floor. The OpenWOP export maps them to `envelope.*`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads.fields import NonNegativeInt, PayloadModel

OutputFailure = Literal["schema-violation", "parse-error", "truncation", "refusal"]
"""RFC 0032 §B.1 reasons this host produces (a subset of the spec's closed enum)."""
Attempt = Annotated[int, Field(ge=1, le=16)]


class _OutputPayload(PayloadModel):
    model: str
    provider: str
    output_name: str


class LlmOutputRetriedPayload(_OutputPayload):
    """A structured answer failed and another attempt is about to be made (attempt >= 2)."""

    attempt: Attempt
    reason: OutputFailure
    previous_error: str | None = None
    """Validator messages of the failed attempt (paths and rules, no excerpt of the output)."""


class LlmOutputExhaustedPayload(_OutputPayload):
    """No attempt produced a valid answer; the call fails with OutputValidationError or OutputRefusedError."""

    total_attempts: Annotated[int, Field(ge=1)]
    final_reason: OutputFailure
    final_error: str | None = None


class LlmOutputRefusedPayload(_OutputPayload):
    """The provider refused (never retried). `refusal_text` is the provider's own words, hence private."""

    refusal_text: str | None = None
    safety_category: str | None = None


class LlmOutputTruncatedPayload(_OutputPayload):
    """The answer stopped at the output budget before it was complete."""

    stop_reason: Literal["max_tokens", "length", "stop_sequence", "unknown"]
    partial_payload_available: bool = False
    output_tokens: NonNegativeInt | None = None
    next_max_tokens: NonNegativeInt | None = None
    """The doubled budget of the retry; None when the model's output limit was already reached."""


class LlmOutputNlToFormatPayload(_OutputPayload):
    """Retries ran out: one free-form answer, then a call that only coerces it into the schema."""

    fallback_calls: Annotated[int, Field(ge=1)] = 1


class LlmOutputRecoveredPayload(_OutputPayload):
    """Lenient parsing recovered a damaged answer before validation (not a retry)."""

    attempt: Attempt
    path: Literal["markdown-fence", "brace-walker", "jsonrepair"]
    byte_offset: NonNegativeInt | None = None


_PARENTS = ("llm.call_completed", "llm.call_started")
SPECS = (
    EventSpec("llm.output_retried", LlmOutputRetriedPayload, Sensitivity.PSEUDONYMOUS, (Actor.AGENT,), _PARENTS,
              phase="3"),
    EventSpec("llm.output_exhausted", LlmOutputExhaustedPayload, Sensitivity.PSEUDONYMOUS, (Actor.AGENT,), _PARENTS,
              phase="3"),
    EventSpec("llm.output_refused", LlmOutputRefusedPayload, Sensitivity.PRIVATE, (Actor.AGENT,), _PARENTS,
              phase="3"),
    EventSpec("llm.output_truncated", LlmOutputTruncatedPayload, Sensitivity.PSEUDONYMOUS, (Actor.AGENT,), _PARENTS,
              phase="3"),
    EventSpec("llm.output_nl_to_format", LlmOutputNlToFormatPayload, Sensitivity.PSEUDONYMOUS, (Actor.AGENT,),
              _PARENTS, phase="3"),
    EventSpec("llm.output_recovered", LlmOutputRecoveredPayload, Sensitivity.PSEUDONYMOUS, (Actor.AGENT,), _PARENTS,
              phase="3"),
)
