"""The verifier's thread: one event loop of its own, on a daemon thread, for every verification
replay of the process, run one at a time. Stopping it is bounded: queued replays are dropped, the
one under way gets a grace period and is then cancelled (its session ends as `error`), and a replay
that still does not end is left to the daemon thread. It knows nothing of what a replay does.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Final, Literal

CLOSE_GRACE_SECONDS: Final = 2.0
"""How long closing the runtime waits for a replay under way to end on its own before cancelling it."""
CANCEL_WAIT_SECONDS: Final = 5.0
"""How long closing then waits for the cancelled replay to end its session before leaving it."""

log = logging.getLogger("metis_core.learning")
Work = Callable[[], Coroutine[Any, Any, None]]
Stopped = Literal["idle", "finished", "cancelled", "left"]


@dataclass
class _Job:
    finished: threading.Event = field(default_factory=threading.Event)
    task: asyncio.Task[None] | None = None


class ReplayThread:
    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._serial = asyncio.Lock()  # bound to `loop` on first use
        self._jobs: list[_Job] = []
        """Submitted and not yet ended, oldest (the one under way) first."""
        self._stopping = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Work) -> None:
        """Run `work()` on the loop once every replay submitted before it has ended."""
        job = _Job()
        with self._lock:
            if self._stopping:
                return
            self._jobs = [*(j for j in self._jobs if not j.finished.is_set()), job]
        asyncio.run_coroutine_threadsafe(self._in_turn(job, work), self.loop)

    async def _in_turn(self, job: _Job, work: Work) -> None:
        job.task = asyncio.current_task()
        try:
            async with self._serial:
                if not self._stopping:  # queued when the thread began to stop: dropped
                    await work()
        finally:
            job.finished.set()

    def wait(self, timeout: float | None) -> bool:
        """Wait until every replay submitted so far has ended; whether one had not."""
        with self._lock:
            pending = [j for j in self._jobs if not j.finished.is_set()]
        for job in pending:
            job.finished.wait(timeout)
        return bool(pending)

    def stop(self, grace: float, close_http: Work) -> Stopped:
        """Drop queued replays, give the running one `grace` seconds, then cancel it; close the loop's
        HTTP sessions (`close_http`, run on the loop) and the loop. What became of the replay under way."""
        with self._lock:
            self._stopping = True
            queued = [j for j in self._jobs if not j.finished.is_set()]
        running = queued[0] if queued else None
        stopped: Stopped = "idle" if running is None else "finished"
        if running is not None and not running.finished.wait(grace):
            task = running.task
            if task is not None:
                self.loop.call_soon_threadsafe(task.cancel)
            stopped = "cancelled" if running.finished.wait(CANCEL_WAIT_SECONDS) else "left"
        if stopped == "left":
            log.warning("a verification replay did not end within %.0f s of being cancelled; left to its "
                        "thread (its session stays open)", CANCEL_WAIT_SECONDS)
            return stopped
        for job in queued[1:]:  # each returns at once: the thread is stopping
            job.finished.wait(CANCEL_WAIT_SECONDS)
        try:
            asyncio.run_coroutine_threadsafe(close_http(), self.loop).result(CANCEL_WAIT_SECONDS)
        except Exception as error:  # closing what the loop opened is best effort
            log.warning("closing the verifier's HTTP sessions failed: %s", type(error).__name__)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(CANCEL_WAIT_SECONDS)
        if not self._thread.is_alive():
            self.loop.close()
        return stopped
