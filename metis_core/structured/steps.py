"""What the structured-output driver reports while it works: one record per RFC 0032 step.

The adapters layer sits below the event bus, so the driver cannot emit catalog events itself: it
hands these records to an `OutputObserver` the caller supplies (the agent turns them into `llm.output_*`
events). Records hold validator messages, paths and offsets, never the model's output — except a
refusal, whose provider text is the point of the record (its event's sensitivity floor says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

FailureReason = Literal["schema-violation", "parse-error", "truncation", "refusal"]


@dataclass(frozen=True, slots=True)
class RetryAttempted:
    model: str
    output_name: str
    attempt: int
    """1-based number of the attempt about to be made (2 for the first retry)."""
    reason: FailureReason
    previous_error: str | None


@dataclass(frozen=True, slots=True)
class RetryExhausted:
    model: str
    output_name: str
    total_attempts: int
    final_reason: FailureReason
    final_error: str | None


@dataclass(frozen=True, slots=True)
class OutputRefused:
    model: str
    output_name: str
    refusal_text: str | None
    safety_category: str | None


@dataclass(frozen=True, slots=True)
class OutputTruncated:
    model: str
    output_name: str
    stop_reason: Literal["max_tokens", "length", "stop_sequence", "unknown"]
    partial_payload_available: bool
    output_tokens: int | None
    next_max_tokens: int | None
    """The doubled budget of the retry, or None when the model's limit is reached."""


@dataclass(frozen=True, slots=True)
class NlToFormatEngaged:
    model: str
    output_name: str
    fallback_calls: int = 1


@dataclass(frozen=True, slots=True)
class RecoveryApplied:
    model: str
    output_name: str
    attempt: int
    path: Literal["markdown-fence", "brace-walker", "jsonrepair"]
    byte_offset: int | None


OutputStep = RetryAttempted | RetryExhausted | OutputRefused | OutputTruncated | NlToFormatEngaged | RecoveryApplied
OutputObserver = Callable[[OutputStep], None]
