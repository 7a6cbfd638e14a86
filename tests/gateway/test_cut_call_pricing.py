"""A call the client cut is priced like any other on the record: estimated when its model has a price,
unpriced (never a $0 that looks free) when it has none (call_budget.cut_usage, call_events)."""

from __future__ import annotations

from metis_core.agent.call_events import completed_payload
from metis_core.gateway.call_budget import cut_usage
from metis_core.messages import Message, MessageMetadata, MessageStatus, Role
from metis_core.models.pricing import PriceTable


def _cut_answer(model: str) -> Message:
    used = cut_usage(None, 12, None, PriceTable.load(), model)
    return Message(role=Role.ASSISTANT, content=[], metadata=MessageMetadata(
        model=model, provider=model.partition(":")[0], usage=used, status=MessageStatus.CANCELLED))


def test_a_cut_call_on_a_model_without_a_price_is_unpriced_on_the_record() -> None:
    answer = _cut_answer("openai_compatible:my-llama")
    assert answer.metadata.usage is not None and answer.metadata.usage.cost_usd is None
    payload = completed_payload(answer)
    assert (payload["cost_usd"], payload["pricing_version"]) == (0.0, "unpriced")


def test_a_cut_call_on_a_priced_model_carries_its_estimated_price() -> None:
    payload = completed_payload(_cut_answer("anthropic:claude-haiku-4-5"))
    assert payload["cost_usd"] > 0 and payload["pricing_version"] == "estimated"
