"""`EventRecorder`: a subscriber that keeps every event it receives in memory, in arrival order.

For tests, the CLI's trace display and anything that needs "what happened just now" without the
trace store. It is not persistence: it holds events only for its own lifetime.
"""

from __future__ import annotations

import threading

from metis_core.events.envelope import Event
from metis_core.events.filters import EventFilter
from metis_core.events.subscription import Subscription


class EventRecorder:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._by_id: dict[str, Event] = {}

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._events.append(event)
            self._by_id[event.id] = event

    def subscription(
        self, filter: EventFilter | None = None, *, name: str = "event-recorder", fast_path: bool = True
    ) -> Subscription:
        """A Subscription that records into this recorder (fast path and all events by default)."""
        return Subscription(filter=filter or EventFilter(), handler=self, name=name, fast_path=fast_path)

    @property
    def events(self) -> list[Event]:
        with self._lock:
            return list(self._events)

    def of_type(self, *event_types: str) -> list[Event]:
        wanted = set(event_types)
        return [event for event in self.events if event.type in wanted]

    def types(self) -> list[str]:
        return [event.type for event in self.events]

    def lookup(self, event_id: str) -> Event | None:
        """By id; fits `causality.walk_to_root`."""
        with self._lock:
            return self._by_id.get(event_id)

    def clear(self) -> None:
        with self._lock:
            self._events.clear()
            self._by_id.clear()

    def __len__(self) -> int:
        return len(self._events)
