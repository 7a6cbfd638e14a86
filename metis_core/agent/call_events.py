"""The events of one model call inside a turn: llm.call_started per attempt, llm.call_failed,
and llm.call_completed's payload from the stored answer.

`CallObserver` is what the fallback chain reports its attempts to; each llm.call_started carries
the turn's `request_options` (agent/request_options.py) so a replay can ask the same again.
"""

from __future__ import annotations

import time
import typing
from typing import Any

from metis_core.agent.recording import TurnRecorder
from metis_core.events.envelope import Actor, Event
from metis_core.events.payloads.fields import StopReason as EventStopReason
from metis_core.events.redaction import redact
from metis_core.ids import new_ulid
from metis_core.messages import Message, ToolUseBlock

EVENT_STOP_REASONS = frozenset(typing.get_args(EventStopReason))
"""Stop reasons the llm.call_completed / turn.completed payloads carry; others are written end_turn."""
_THINKING = ("thinking", "redacted_thinking")


class CallObserver:
    """Turns the fallback chain's attempts into llm.call_started / llm.call_failed events."""

    def __init__(self, recorder: TurnRecorder, parent: Event | None, estimated_tokens: int,
                 composed: dict[str, Any] | None = None, *, is_worker: bool = False,
                 request_options: dict[str, Any] | None = None) -> None:
        self.recorder = recorder
        self.request_options = request_options
        """The turn's request_options payload (None leaves the field out)."""
        self.is_worker = is_worker
        self.composed = composed
        """llm.prompt_composed payload, emitted once under the first attempt's llm.call_started."""
        self.parent = parent
        self.estimated_tokens = estimated_tokens
        self.started: Event | None = None
        self.started_at = time.perf_counter()
        self.model = ""
        self.attempts = 0

    def attempt_started(self, model: str, attempt: int) -> None:
        self.model = model
        self.attempts += 1
        self.started_at = time.perf_counter()
        payload: dict[str, Any] = {
            "model": model, "provider": model.partition(":")[0], "estimated_input_tokens": self.estimated_tokens,
            "request_id": new_ulid(), "is_worker": self.is_worker,
        }
        if self.request_options is not None:
            payload["request_options"] = self.request_options
        self.started = self.recorder.emit("llm.call_started", payload, self.parent, actor=Actor.AGENT)
        if self.composed is not None and self.attempts == 1:
            self.recorder.emit("llm.prompt_composed", self.composed, self.started, actor=Actor.AGENT)

    def attempt_failed(self, model: str, error: BaseException) -> str | None:
        failed = self.failed(model, getattr(error, "error_class", "other"), str(error),
                             getattr(error, "retry_count", 0))
        self.parent = failed  # a fallback attempt is caused by the failure before it
        return failed.id if failed is not None else None

    def failed(self, model: str, error_class: Any, message: str, retry_count: int = 0) -> Event | None:
        return self.recorder.emit("llm.call_failed", {
            "model": model, "provider": model.partition(":")[0], "error_class": str(error_class),
            "error_message_redacted": redact(message), "retry_count": retry_count,
            "latency_ms": int((time.perf_counter() - self.started_at) * 1000),
        }, self.started, actor=Actor.AGENT)


def completed_payload(message: Message) -> dict[str, Any]:
    meta = message.metadata
    usage = meta.usage
    assert usage is not None and meta.model is not None and meta.provider is not None
    stop = meta.stop_reason if meta.stop_reason in EVENT_STOP_REASONS else "end_turn"
    tool_calls = thinking = 0
    for block in message.content:  # one pass, no list built (this runs on every call's end)
        if isinstance(block, ToolUseBlock):
            tool_calls += 1
        elif block.type in _THINKING:
            thinking += 1
    return {
        "model": meta.model, "provider": meta.provider,
        "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        # The catalog types cost as a float; a call without a price (an unpriced model, a cut call
        # on one) is 0.0 with pricing_version "unpriced" here, while the message itself keeps
        # cost_usd None (never a silent zero).
        "cost_usd": float(usage.cost_usd or 0),
        "pricing_version": (usage.pricing_version or "unpriced") if usage.cost_usd is not None else "unpriced",
        "latency_ms": usage.latency_ms, "stop_reason": stop,
        "produced_tool_calls": tool_calls, "produced_thinking_blocks": thinking,
    }
