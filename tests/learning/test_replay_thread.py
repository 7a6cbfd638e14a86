"""The verifier's thread: every replay on one long-lived event loop, one at a time; stopping drops
queued replays, cancels the one under way after its grace, and closes the loop's HTTP sessions."""

from __future__ import annotations

import asyncio
import threading

import pytest

from metis_core.learning.replay_thread import ReplayThread


@pytest.fixture(autouse=True)
def learning_backend() -> str:
    """No store here: nothing to run on both backends."""
    return "none"


def test_replays_run_one_at_a_time_on_one_loop_that_outlives_them() -> None:
    thread = ReplayThread("test-verifier")
    seen: list[tuple[asyncio.AbstractEventLoop, str]] = []
    overlapping: list[bool] = []
    busy = threading.Event()

    async def replay() -> None:
        overlapping.append(busy.is_set())
        busy.set()
        await asyncio.sleep(0)
        seen.append((asyncio.get_running_loop(), threading.current_thread().name))
        busy.clear()

    async def close_http() -> None:
        seen.append((asyncio.get_running_loop(), "closed"))

    gate = threading.Event()

    async def held() -> None:  # under way until the gate opens: wait() finds it pending, whatever the load
        await asyncio.to_thread(gate.wait, 5)

    thread.submit(held)
    for _ in range(3):
        thread.submit(replay)
    assert thread.wait(0.01), "replays were under way"
    gate.set()
    thread.wait(5)
    assert len(seen) == 3 and not thread.wait(5), "every replay ended: nothing left to wait for"
    assert thread.stop(0.0, close_http) == "idle"
    assert overlapping == [False, False, False]
    assert {loop for loop, _ in seen} == {thread.loop} and thread.loop.is_closed()
    assert [name for _, name in seen] == ["test-verifier"] * 3 + ["closed"]


def test_stopping_drops_queued_replays_and_cancels_the_one_under_way_after_its_grace() -> None:
    thread = ReplayThread("test-verifier")
    started, cancelled, ran_after = threading.Event(), threading.Event(), threading.Event()

    async def never_ends() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def queued() -> None:
        ran_after.set()

    async def close_http() -> None:
        return None

    thread.submit(never_ends)
    thread.submit(queued)
    assert started.wait(5)
    assert thread.stop(0.01, close_http) == "cancelled"
    assert cancelled.is_set() and not ran_after.is_set()
    thread.submit(queued)  # a stopped thread takes no more
    assert not thread.wait(0) and not ran_after.is_set()
