"""One gateway call's budget reservation: its worst-case cost held before upstream, settled after.

`worst_case` prices a request before it is sent: the input estimate at the input rate plus
`max_tokens` (else the configured cap, else the model's max output) at the output rate, the dearest
member of a fallback chain. `CallBudget` is the call's handle on the reservation (quotas.py holds it
in the store): `charge` each upstream answer, `top_up` before another upstream call of the same
request, `cut` a call that used tokens but gave no priced answer (`cut_usage` is its record), `close` to
release what is left.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from metis_core.adapters._common.chars_per_token import CHARS_PER_TOKEN
from metis_core.errors import GatewayRequestError, GatewayUnpricedModelError
from metis_core.ids import new_ulid
from metis_core.messages import Message, MessageStatus, TextBlock, ThinkingBlock, ToolUseBlock, Usage

if TYPE_CHECKING:
    from metis_core.gateway.quotas import QuotaGate, Subject
    from metis_core.models.pricing import PriceTable
    from metis_core.models.registry import ModelRegistry
    from metis_core.store.gateway_keys import BudgetHold, GatewayKeyRecord


@dataclass(frozen=True, slots=True)
class WorstCase:
    """What one upstream call of a request may cost at most, and the figures it was made of."""

    amount: Decimal
    input_tokens: int
    output_tokens: int
    input_rate: Decimal
    """USD per input token (the dearest member's): what a cut call's input is charged at."""
    output_rate: Decimal
    unpriced: bool = False
    """A member has no price: `amount` is the configured reservation for unpriced models."""

    def describe(self) -> str:
        if self.unpriced:
            return "a model without a price: the gateway's configured reservation for unpriced models"
        return f"~{self.input_tokens} input tokens and up to {self.output_tokens} output tokens"


def checked_max_tokens(value: object) -> int | None:
    """The request's output cap, or None; GatewayRequestError for anything but a whole number >= 1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GatewayRequestError(f"max_tokens must be a whole number of at least 1, not {value!r}")
    return value


def worst_case(members: list[str], input_tokens: int, max_tokens: int | None, *, prices: PriceTable | None,
               registry: ModelRegistry, output_cap: int | None, unpriced_reserve: Decimal | None) -> WorstCase:
    """The dearest member's worst case for one upstream call. A member without a price takes
    `unpriced_reserve`; with none configured, GatewayUnpricedModelError (a budget cannot hold it)."""
    found: WorstCase | None = None
    for model in members:
        output = max_tokens if max_tokens is not None else output_cap
        if output is None:
            output = registry.capabilities(model).max_output_tokens
        price = prices.price_for(model) if prices is not None else None
        if price is None:
            if unpriced_reserve is None:
                raise GatewayUnpricedModelError(
                    f"{model} has no price, so this key's budget cannot hold its cost; the gateway operator can "
                    "add its price under prices: in config.yaml, or set METIS_GATEWAY_UNPRICED_RESERVE_USD")
            case = WorstCase(unpriced_reserve, input_tokens, output, Decimal(0), Decimal(0), unpriced=True)
        else:
            rates = price.rates
            if (price.long_context_rates is not None and price.long_context_threshold is not None
                    and input_tokens > price.long_context_threshold):
                rates = price.long_context_rates
            input_rate = max(rates.input, rates.cache_write)
            output_rate = max(rates.output, rates.reasoning)
            case = WorstCase(input_rate * input_tokens + output_rate * output, input_tokens, output, input_rate,
                             output_rate)
        if found is None or case.amount > found.amount:
            found = case
    assert found is not None
    return found


def streamed_tokens(partial: Message | None) -> int:
    """Output tokens a cut answer used, estimated from what it streamed (~4 characters a token)."""
    if partial is None:
        return 0
    chars = 0
    for block in partial.content:
        if isinstance(block, TextBlock | ThinkingBlock):
            chars += len(block.text)
        elif isinstance(block, ToolUseBlock):
            chars += len(block.name) + len(str(block.input))
        else:
            chars += len(str(block))
    return math.ceil(chars / CHARS_PER_TOKEN)


class CallBudget:
    """The reservation of one gateway call (several upstream calls for a structured run or a continued
    pause). A key, user and team without budgets hold nothing: then only tokens are counted."""

    def __init__(self, gate: QuotaGate, key: GatewayKeyRecord, subjects: list[Subject],
                 case: WorstCase | None = None, *, lease_seconds: float = 900.0) -> None:
        self.gate = gate
        self.key = key
        self.subjects = subjects
        self.case = case
        self.lease_seconds = lease_seconds
        self.reservation_id = "rsv_" + new_ulid() if case is not None else ""
        self.holds: list[BudgetHold] = []
        self.open = False

    def reserve(self, *, shape: str, model: str) -> None:
        """Hold the worst case of one upstream call (again, after a charge: a top-up); GatewayBudgetError."""
        if self.case is None:
            return
        self.holds = self.gate.reserve(self.key, self.subjects, self.reservation_id, self.case.amount,
                                       lease_seconds=self.lease_seconds, shape=shape, model=model,
                                       why=self.case.describe())
        self.open = bool(self.holds)

    def top_up(self, *, shape: str, model: str) -> None:
        """Before another upstream call of this request: hold its worst case again, or refuse it."""
        self.reserve(shape=shape, model=model)

    def cost_of(self, answer: Message) -> Decimal | None:
        """What an upstream answer is charged: its price; a cut answer (the stream broke) at least what it
        streamed, since a provider's usage so far may lag its text; an unpriced model's answer, on a
        budgeted key, what was reserved for it."""
        usage = answer.metadata.usage
        priced = usage.cost_usd if usage is not None else None
        if not self.open or self.case is None:
            return priced
        if priced is None and self.case.unpriced:
            return self.case.amount
        if answer.status is not MessageStatus.COMPLETE:
            return max(priced or Decimal(0), self.used(answer))
        return priced if priced is not None else self.used(answer)

    def used(self, partial: Message | None) -> Decimal:
        """The input estimate and what `partial` streamed, at the worst-case rates, at most the reservation."""
        case = self.case
        if case is None:
            return Decimal(0)
        if case.unpriced:
            return case.amount
        spent = case.input_rate * case.input_tokens + case.output_rate * streamed_tokens(partial)
        return min(spent, case.amount)

    def charge(self, answer: Message, *, more: bool = False) -> list[dict[str, Any]]:
        """Charge one upstream answer (and count its tokens); the quota alerts it fired. `more`: another
        upstream call of this request may follow, so the reservation stays (less this cost)."""
        usage = answer.metadata.usage
        tokens = usage.total_input_tokens + usage.output_tokens if usage is not None else 0
        if usage is None and not self.open:
            return []
        alerts = self.gate.charge(self.subjects, self.cost_of(answer), tokens,
                                  reservation_id=self.reservation_id if self.open else None,
                                  holds=self.holds if self.open else None, more=more)
        self.open = self.open and more
        return alerts

    def cut(self, partial: Message | None) -> Decimal | None:
        """The upstream call in flight ended without a priced answer (the client left, the stream broke):
        charge what it used, as far as it is known, and release the rest. Returns what was charged
        (None: nothing was held, so nothing was charged)."""
        if not self.open:
            return None
        used = self.used(partial)
        self.gate.charge(self.subjects, used, 0, reservation_id=self.reservation_id, holds=self.holds, more=False)
        self.open = False
        return used

    def close(self) -> None:
        """Release what is still held (a failed call, the end of a run whose calls were charged)."""
        if self.open:
            self.open = False
            self.gate.release(self.reservation_id)


CUT_PRICING = "estimated"
"""The pricing_version of a cut call's usage: its tokens estimated from what was sent and streamed."""


def cut_usage(partial: Message | None, input_tokens: int, charged: Decimal | None, prices: PriceTable | None,
              model: str) -> Usage:
    """What a call cut mid-answer used, for the record: the input estimate and what it streamed, priced
    at what the key's budget was charged for it, else at the answering model's price (None: unpriced),
    so the record, the trace and the key's counter tell the same spend."""
    usage = Usage(input_tokens=input_tokens, output_tokens=streamed_tokens(partial), pricing_version=CUT_PRICING)
    if charged is not None:
        usage.cost_usd = charged
        return usage
    price = prices.price_for(model) if prices is not None and model else None
    usage.cost_usd = price.cost_of(usage) if price is not None else None
    if usage.cost_usd is None:
        usage.pricing_version = None  # no price: unpriced on the record, like any call to that model
    return usage
