"""The spend of a turn made of several model calls, kept on the one message it stores.

A structured run stores one assistant message however many calls it made (retries, corrections, a
doubled budget), or one CANCELLED / ERROR message when it ends without an answer. That message carries
the sum of every call's usage and how many calls it stands for (metadata `model_calls`,
`unpriced_calls`), so spend read from messages equals the sum of the turn's llm.call_completed events.
`AnswerSpend.of_metadata` reads a stored message's spend from its metadata's JSON form, without the models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the models load where a message is built; reading spend from stored rows needs none
    from metis_core.messages.message import Message
    from metis_core.messages.metadata import Usage

MODEL_CALLS = "model_calls"
"""Metadata field: how many model calls a stored assistant message stands for (1 when absent)."""
CLIENT_HISTORY = "client_history"
"""The pricing_version of an assistant message a gateway client sent as its history: no call of ours."""
UNPRICED_CALLS = "unpriced_calls"
"""Metadata field: how many of those calls had no price (absent: 1 when its cost is None, else 0)."""


@dataclass
class CallSpend:
    """Every completed call's usage, added up: priced costs summed, unpriced calls counted apart."""

    calls: int = 0
    unpriced: int = 0
    usage: Usage | None = None

    def add(self, usage: Usage | None) -> None:
        self.calls += 1
        if usage is None or usage.cost_usd is None:
            self.unpriced += 1
        if usage is None:
            return
        from metis_core.messages.metadata import Usage

        if self.usage is None:
            self.usage = usage.model_copy()
            return
        total = self.usage
        priced = [c for c in (total.cost_usd, usage.cost_usd) if c is not None]
        self.usage = Usage(
            input_tokens=total.input_tokens + usage.input_tokens,
            output_tokens=total.output_tokens + usage.output_tokens,
            cached_input_tokens=total.cached_input_tokens + usage.cached_input_tokens,
            cache_creation_input_tokens=total.cache_creation_input_tokens + usage.cache_creation_input_tokens,
            reasoning_tokens=total.reasoning_tokens + usage.reasoning_tokens,
            cost_usd=sum(priced, Decimal(0)) if priced else None,
            pricing_version=usage.pricing_version or total.pricing_version,
            latency_ms=total.latency_ms + usage.latency_ms,
        )  # fmt: skip

    def stamp(self, message: Message) -> None:
        """Make `message` carry every call: the summed usage and the call counts in its metadata."""
        message.metadata.usage = self.usage.model_copy() if self.usage is not None else None
        setattr(message.metadata, MODEL_CALLS, self.calls)
        setattr(message.metadata, UNPRICED_CALLS, self.unpriced)


def call_counts(model_calls: Any, unpriced_calls: Any, *, priced: bool) -> tuple[int, int]:
    """(model calls, unpriced calls) of a stored assistant message, from its metadata's `model_calls` and
    `unpriced_calls` (None when absent) and whether it carries a priced usage."""
    unpriced = (0 if priced else 1) if unpriced_calls is None else int(unpriced_calls)
    return int(model_calls or 1), unpriced


def calls_of(message: Message) -> tuple[int, int]:
    """(model calls, unpriced calls) a stored assistant message stands for."""
    extra = message.metadata.model_extra or {}
    usage = message.metadata.usage
    return call_counts(extra.get(MODEL_CALLS), extra.get(UNPRICED_CALLS),
                       priced=usage is not None and usage.cost_usd is not None)


@dataclass(frozen=True)
class AnswerSpend:
    """What one stored assistant message adds to a spend total: the calls it stands for, its tokens
    (input counts cached and cache-writing tokens, as `Usage.total_input_tokens`) and its priced cost."""

    calls: int
    unpriced_calls: int
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)

    @classmethod
    def of_metadata(cls, metadata: Mapping[str, Any]) -> AnswerSpend:
        """From the metadata's JSON form: the stored `metadata_json` column, or
        `message.metadata.model_dump(mode="json")` (the same text, parsed)."""
        usage = metadata.get("usage")
        cost = None if usage is None else usage.get("cost_usd")
        calls, unpriced = call_counts(metadata.get(MODEL_CALLS), metadata.get(UNPRICED_CALLS), priced=cost is not None)
        if usage is None:
            return cls(calls, unpriced)
        tokens_in = (int(usage.get("input_tokens") or 0) + int(usage.get("cached_input_tokens") or 0)
                     + int(usage.get("cache_creation_input_tokens") or 0))
        return cls(calls, unpriced, tokens_in, int(usage.get("output_tokens") or 0),
                   Decimal(cost) if cost is not None else Decimal(0))
