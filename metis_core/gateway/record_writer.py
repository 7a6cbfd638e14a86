"""The gateway's one record writer: a thread draining a queue of record jobs, in submission order.

Each job emits a call's events and may stage its conversation (session row, messages). Every batch
starts with a short linger (unless a full batch is already waiting), then every job queued runs as
one batch: its events reach the bus as one burst and its conversations are written in one
transaction as prepared rows, so a busy gateway pays one commit per batch, not per call. A failed
job or a refused conversation is logged and isolated; nothing submitted is dropped: `drain()` and
`close()` wait for all of it, and pending work also runs at interpreter exit. The backlog is bounded
by backpressure, not by dropping: past `max_backlog` jobs not yet run, `room()` makes new calls wait
(asynchronously, on their own loop) until the writer is back under half of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from metis_core.errors import MetisError

if TYPE_CHECKING:
    from metis_core.events.bus import EventBus
    from metis_core.store.sessions import SessionStore, StoredConversation

log = logging.getLogger("metis_core.gateway")
MAX_BATCH = 256
"""At most this many jobs (calls' events and conversations) per transaction."""
LINGER_SECONDS = 0.025
"""How long the writer waits before each batch, so the calls of those milliseconds share one
transaction and one trace commit. Every batch waits, not only the first after a quiet spell: the
calls that arrived while the last batch was written would otherwise make a batch of their own, a
few calls paying a whole batch's commits (on a busy gateway, a quarter of the batches were of six
calls or fewer). A batch costs ~1 ms of CPU whatever its size (two commits, their WAL pages, the
thread hand-offs: bench/gateway_record.py at 8 vs 128 calls a batch), so the wait is what keeps the
record cheap per call, at the price of events landing up to this much later (plus the batch before)."""
MAX_BACKLOG = 4 * MAX_BATCH
"""Record jobs submitted and not yet run (a call submits one; two or three when the writer reaches it
while it runs: call_record.py) past which new calls wait for the writer
(METIS_GATEWAY_RECORD_BACKLOG). Four batches: enough to ride out a slow commit, little enough that a
writer that cannot keep up slows admissions instead of holding thousands of calls in memory."""
BUS_POLL_SECONDS = 0.002
"""How often a writer held back by a full bus looks again."""


class RecordWriter:
    """Runs record jobs on one thread, in order; stages conversations and commits them per batch."""

    def __init__(self, store: SessionStore, max_batch: int = MAX_BATCH, bus: EventBus | None = None,
                 linger: float = LINGER_SECONDS, max_backlog: int = MAX_BACKLOG) -> None:
        if max_batch < 1 or max_backlog < 1:
            raise ValueError("max_batch and max_backlog must be at least 1")
        self.store = store
        self.linger = linger
        self.bus = bus
        """When given, a batch's events reach the bus's dispatcher together (one trace commit per batch)."""
        self.max_batch = max_batch
        # A one-thread executor, not a bare thread: its pending work runs at interpreter exit.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metis-gateway-record")
        self._jobs: deque[Callable[[], object]] = deque()
        self._lock = threading.Lock()
        self._scheduled = False
        self._staged: list[StoredConversation] = []
        self.batches = 0
        """Transactions committed so far (tests, the benchmark)."""
        self.max_backlog = max_backlog
        self.resume_at = max_backlog // 2
        """Waiting calls are let in once the backlog is back down to this (the low-water mark)."""
        self._backlog = 0  # jobs submitted and not yet run, the running batch included
        self._full = False  # set past max_backlog, cleared at resume_at: admissions wait meanwhile
        self._gates: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}
        self.peak_backlog = 0
        """The largest backlog seen (tests, the benchmark)."""
        self.waits = 0
        """Admissions that had to wait for the writer (tests, the benchmark)."""

    @property
    def backlog(self) -> int:
        """Jobs submitted and not yet run, the running batch included."""
        return self._backlog

    async def room(self) -> None:
        """Return once the backlog is under the bound (at once, almost always); never blocks the loop.

        Past `max_backlog` every caller waits on its loop's gate until the writer thread has brought
        the backlog down to `resume_at` and opened it; a call already admitted is never held up."""
        while self._full:
            loop = asyncio.get_running_loop()
            with self._lock:
                if not self._full:
                    return
                gate = self._gates.get(loop)
                if gate is None:
                    gate = self._gates[loop] = asyncio.Event()
                self.waits += 1
            await gate.wait()

    def submit(self, job: Callable[[], object]) -> None:
        """Queue `job`; it runs after every job submitted before it. (Runs on the event loop, once or a few
        times a call: the lock is taken with acquire/release, not `with`, which costs a context-manager round.)"""
        lock = self._lock
        lock.acquire()
        try:
            self._jobs.append(job)
            self._backlog += 1
            if self._backlog > self.peak_backlog:
                self.peak_backlog = self._backlog
            if self._backlog > self.max_backlog:
                self._full = True
            if self._scheduled:
                return
            self._scheduled = True
        finally:
            lock.release()
        self._executor.submit(self._run)

    def stage(self, conversation: StoredConversation) -> None:
        """From a job: write `conversation` with the rest of this batch."""
        self._staged.append(conversation)

    def drain(self) -> None:
        """Wait until every job submitted before this call has run and its conversations committed."""
        self._executor.submit(lambda: None).result()

    def close(self) -> None:
        """Run and commit everything pending, then stop the thread."""
        self._executor.shutdown(wait=True)

    # --- on the writer thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            if self.linger > 0 and len(self._jobs) < self.max_batch:
                time.sleep(self.linger)  # every batch lingers: its size follows the rate, not the last batch's time
            self._wait_for_the_bus()
            with self._lock:
                if not self._jobs:
                    self._scheduled = False
                    return
                count = min(len(self._jobs), self.max_batch)
                batch = [self._jobs.popleft() for _ in range(count)]
            try:
                self._run_jobs(batch)
                self._commit()
            finally:  # whatever happened, these jobs are no longer waiting: never leave admissions shut
                self._ran(count)

    def _run_jobs(self, batch: list[Callable[[], object]]) -> None:
        """Run a batch's jobs, their events held for the bus's dispatcher until the last has run."""
        bus = self.bus
        if bus is not None:
            bus.hold_dispatch()
        try:
            for job in batch:
                try:
                    job()
                except Exception:  # the answer has left; a failed record is logged, never raised
                    log.exception("gateway record job failed")
        finally:
            if bus is not None:
                bus.release_dispatch()

    def _wait_for_the_bus(self) -> None:
        """Hold the next batch while the bus is more than half full: its queue rejects events when
        full, so a trace store that falls behind slows this thread (and, through it, admissions)
        instead of losing events."""
        bus = self.bus
        if bus is None:
            return
        while bus.queue_depth > bus.queue_capacity // 2 and not bus.closed:
            time.sleep(BUS_POLL_SECONDS)

    def _ran(self, count: int) -> None:
        """`count` jobs are done and committed: open the gates once the backlog is down to `resume_at`."""
        with self._lock:
            self._backlog -= count
            if not self._full or self._backlog > self.resume_at:
                return
            self._full = False
            gates, self._gates = self._gates, {}
        for loop, gate in gates.items():
            with contextlib.suppress(RuntimeError):  # that loop has closed: nobody is waiting on it
                loop.call_soon_threadsafe(gate.set)

    def _commit(self) -> None:
        staged, self._staged = self._staged, []
        if not staged:
            return
        try:
            refused = self.store.store_conversations(staged)
        except MetisError as error:  # the batch's transaction failed: try each alone, lose only what fails
            log.warning("gateway record batch of %d not stored together (%s); storing one by one", len(staged), error)
            refused = []
            for item in staged:
                try:
                    refused += self.store.store_conversations([item])
                except MetisError as single:
                    refused.append((item.session_id, single))
        self.batches += 1
        for session_id, problem in refused:
            log.warning("gateway call %s not stored: %s", session_id, problem)
