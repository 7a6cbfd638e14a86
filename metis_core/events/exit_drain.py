"""Drains every live event bus when the interpreter exits normally (a script that just returns).

The bus's workers are daemon threads, so without this a program that never calls
`bus.shutdown()` would lose whatever was still queued. The wait is bounded by one total budget
(EXIT_DRAIN_SECONDS, or METIS_BUS_EXIT_DRAIN_SECONDS) so a stuck handler cannot hang the exit.
Nothing here helps on SIGKILL or os._exit: see docs/event-bus.md for what survives those.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from metis_core.events.bus import EventBus

logger = logging.getLogger("metis_core.events.bus")

EXIT_DRAIN_SECONDS = 10.0
EXIT_DRAIN_ENV = "METIS_BUS_EXIT_DRAIN_SECONDS"

_live: weakref.WeakSet[EventBus] = weakref.WeakSet()
_registered = False
_lock = threading.Lock()


def track(bus: EventBus) -> None:
    """Remember `bus` so it is drained at exit; registers the exit hook on first use."""
    global _registered
    with _lock:
        _live.add(bus)
        if not _registered:
            atexit.register(drain_live_buses)
            _registered = True


def _budget() -> float:
    raw = os.environ.get(EXIT_DRAIN_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else EXIT_DRAIN_SECONDS
    except ValueError:
        return EXIT_DRAIN_SECONDS


def drain_live_buses(budget: float | None = None) -> None:
    """Shut down (with drain) every bus not yet shut down, within one total time budget."""
    deadline = time.monotonic() + (_budget() if budget is None else budget)
    with _lock:
        buses = [bus for bus in _live if not bus.closed]
    for bus in buses:
        remaining = max(0.0, deadline - time.monotonic())
        try:
            bus.shutdown(drain=True, timeout=remaining)
        except Exception as error:  # exit must go on; the loss is logged
            logger.error(
                "event bus could not drain at exit within its budget: pending_events=%d error=%s",
                bus.queue_depth, error,
                extra={"pending_events": bus.queue_depth, "error": str(error)},
            )  # fmt: skip
