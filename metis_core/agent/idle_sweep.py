"""Idle sessions ended on a timer, for the processes that run for days (`metis serve`,
`metis gateway serve`): a CLI command ends them when it starts, a server sweeps every
`sessions.sweep_interval_minutes` on a daemon thread until the runtime closes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from metis_core.errors import MetisError

log = logging.getLogger(__name__)


class IdleSweep:
    """Calls `sweep` at once and then every `interval_seconds` until `stop`; a failed sweep (a locked store, a lost
    connection) is logged and tried again at the next tick, never ending the thread."""

    def __init__(self, sweep: Callable[[], list[str]], interval_seconds: float) -> None:
        if interval_seconds <= 0:
            raise ValueError("interval_seconds must be positive")
        self._sweep = sweep
        self._interval = interval_seconds
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="metis-idle-sweep", daemon=True)
        self.swept = 0
        """Sessions this timer has ended so far."""

    def start(self) -> IdleSweep:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                ended = self._sweep()
            except MetisError as error:
                log.warning("idle-session sweep failed, trying again in %.0f s: %s", self._interval, error)
            else:
                self.swept += len(ended)
                if ended:
                    log.info("ended %d idle session(s) as abandoned", len(ended))
            self._stopped.wait(self._interval)
