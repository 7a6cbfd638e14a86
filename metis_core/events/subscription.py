"""What a subscriber hands the bus (`Subscription`), what it gets back (`SubscriptionHandle`),
and the `@slow` marker that keeps slow handlers off the fast path.

Handlers are sync callables or async functions taking one Event. This module holds no state
about live subscriptions; the bus does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from metis_core.events.envelope import Event
from metis_core.events.filters import EventFilter

EventHandler = Callable[[Event], object]
"""`def handle(event) -> None` or `async def handle(event) -> None`; a returned awaitable is
awaited on the bus loop, any other return value is ignored."""

_SLOW_MARK = "__metis_slow_handler__"
HandlerT = TypeVar("HandlerT", bound=Callable[..., object])


def slow(handler: HandlerT) -> HandlerT:
    """Mark a handler as unable to finish in <1ms per event; the bus refuses it on the fast path."""
    setattr(handler, _SLOW_MARK, True)
    return handler


def is_slow(handler: Callable[..., object]) -> bool:
    return bool(getattr(handler, _SLOW_MARK, False))


@dataclass(frozen=True)
class Subscription:
    """A handler and the events it wants. Fast-path handlers run inline in the dispatch worker and
    must finish in <1ms; batch handlers (the default) get their own worker thread and queue."""

    filter: EventFilter
    handler: EventHandler
    name: str
    fast_path: bool = False


@dataclass(frozen=True)
class SubscriptionHandle:
    """Returned by `EventBus.subscribe`; pass it to `unsubscribe`."""

    id: str
    subscription: Subscription = field(compare=False)
