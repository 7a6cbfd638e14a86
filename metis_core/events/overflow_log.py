"""One ERROR line per overload episode instead of one per refused event.

Under overload a bus may refuse tens of thousands of events; logging each would flood the log
at the worst moment. The first refusal of an episode is logged in full; further ones are counted
and summarised at most once per `interval` seconds, and the end of the episode logs the total.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any


class OverflowLog:
    """Aggregates the ERROR lines of one kind of refusal. Thread-safe."""

    def __init__(self, logger: logging.Logger, interval: float = 1.0) -> None:
        self._logger = logger
        self._interval = interval
        self._lock = threading.Lock()
        self.active = False
        """True from the first refusal of an episode until `recovered`; read without the lock."""
        self._total = 0
        self._unreported = 0
        self._started = 0.0
        self._last_line = 0.0

    def rejected(self, message: str, *args: object, extra: Mapping[str, Any]) -> None:
        """Record one refusal; logs the first of an episode and then one summary per interval."""
        now = time.monotonic()
        with self._lock:
            self._total += 1
            if not self.active:
                self.active = True
                self._started = self._last_line = now
                self._total, self._unreported = 1, 0
                self._logger.error(message, *args, extra=dict(extra))
                return
            self._unreported += 1
            if now - self._last_line < self._interval:
                return
            count, self._unreported, self._last_line = self._unreported, 0, now
        self._logger.error(
            message + " (and %d more refused in the last %.1fs)", *args, count, now - self._started,
            extra={**extra, "refused_since_last_line": count},
        )  # fmt: skip

    def recovered(self, what: str) -> None:
        """The queue took an event again: log the episode's total once."""
        with self._lock:
            if not self.active:
                return
            self.active = False
            total, seconds = self._total, time.monotonic() - self._started
        self._logger.error(
            "%s: %d events refused in %.1fs", what, total, seconds,
            extra={"refused_events": total, "overflow_seconds": round(seconds, 3)},
        )  # fmt: skip
