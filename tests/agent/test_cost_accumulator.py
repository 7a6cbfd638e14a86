"""The runtime's running per-session spend: agent calls and delegated workers add up; gateway calls are not kept."""

from __future__ import annotations

from decimal import Decimal

from metis_core.agent.cost import CostAccumulator
from metis_core.events.envelope import Actor, Event


def _event(kind: str, session: str, payload: dict[str, object]) -> Event:
    return Event(type=kind, payload=payload, session_id=session, actor=Actor.AGENT)


def test_calls_and_delegated_spend_add_up_exactly_per_session() -> None:
    costs = CostAccumulator()
    for _ in range(3):
        costs.handle(_event("llm.call_completed", "s1", {"cost_usd": 0.1}))
    costs.handle(_event("delegate.completed", "s1", {"worker_total_cost_usd": 0.2}))
    costs.handle(_event("llm.call_completed", "s2", {"cost_usd": 1}))
    assert costs.total("s1") == Decimal("0.5") and costs.calls("s1") == 3
    assert costs.total("s2") == Decimal(1) and costs.sessions() == 2


def test_a_gateway_call_is_not_kept() -> None:
    costs = CostAccumulator()
    costs.handle(_event("llm.call_completed", "g1", {"cost_usd": 0.3, "gateway_key_id": "gk_1"}))
    costs.handle(_event("llm.call_completed", "a1", {"cost_usd": 0.3, "gateway_key_id": None}))
    assert costs.sessions() == 1 and costs.total("g1") == Decimal(0) and costs.total("a1") == Decimal("0.3")
