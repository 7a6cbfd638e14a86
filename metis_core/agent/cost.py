"""The cost accumulator: a fast-path subscriber keeping each session's running spend.

It adds each llm.call_completed `cost_usd` as a Decimal (built from the payload's string form, so
no binary float error accumulates across thousands of calls), and rolls a delegated worker's
spend (`worker_total_cost_usd` of delegate.completed / delegate.failed) into the planner session.
Gateway calls (a `gateway_key_id` on the event) are not kept: each is a session of its own that no
agent resumes, their spend lives in the gateway's quota counters and the trace, and keeping them
would grow a long-running gateway's memory by an entry per call.
"""

from __future__ import annotations

import threading
from decimal import Decimal

from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event
from metis_core.events.filters import EventFilter
from metis_core.events.subscription import Subscription, SubscriptionHandle

ROLLUP_TYPES = frozenset({"delegate.completed", "delegate.failed"})


class CostAccumulator:
    def __init__(self) -> None:
        self._totals: dict[str, Decimal] = {}
        self._calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def handle(self, event: Event) -> None:
        if event.type in ROLLUP_TYPES:
            cost = Decimal(str(event.payload.get("worker_total_cost_usd", 0)))
            with self._lock:
                self._totals[event.session_id] = self._totals.get(event.session_id, Decimal(0)) + cost
            return
        if event.payload.get("gateway_key_id") is not None:
            return
        cost = Decimal(str(event.payload.get("cost_usd", 0)))
        with self._lock:
            self._totals[event.session_id] = self._totals.get(event.session_id, Decimal(0)) + cost
            self._calls[event.session_id] = self._calls.get(event.session_id, 0) + 1

    def sessions(self) -> int:
        """How many sessions' totals are held."""
        with self._lock:
            return len(self._totals)

    def total(self, session_id: str) -> Decimal:
        with self._lock:
            return self._totals.get(session_id, Decimal(0))

    def calls(self, session_id: str) -> int:
        with self._lock:
            return self._calls.get(session_id, 0)

    def seed(self, session_id: str, total: Decimal, calls: int = 0) -> None:
        """Start a resumed session from what the store already knows."""
        with self._lock:
            self._totals[session_id] = total
            self._calls[session_id] = calls

    def attach(self, bus: EventBus) -> SubscriptionHandle:
        return bus.subscribe(Subscription(
            filter=EventFilter(event_types={"llm.call_completed", *ROLLUP_TYPES}), handler=self.handle,
            name="cost-accumulator", fast_path=True,
        ))
