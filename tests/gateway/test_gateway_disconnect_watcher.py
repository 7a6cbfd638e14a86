"""DisconnectWatcher: `receive()` stepped on its futures (or a Task of it), as the looping coroutine was.

It listens on past anything but `http.disconnect`, fires only on a disconnect, and a `receive` that
fails leaves the call alone (nothing to cancel for) and no task behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from starlette.requests import Request

from metis_core.gateway.app import DisconnectWatcher, GatewayApp
from metis_core.gateway.disconnect_watch import MAX_MESSAGES_PAST


class Record:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def cancelled(self, message: object, reason: str) -> None:
        self.reasons.append(reason)


def test_a_message_other_than_a_disconnect_is_listened_past() -> None:
    async def scenario() -> tuple[Any, list[str], int]:
        messages = [{"type": "http.request", "body": b"", "more_body": False}, {"type": "http.disconnect"}]
        heard: list[str] = []

        async def receive() -> dict[str, Any]:
            await asyncio.sleep(0.01)
            message = messages.pop(0)
            heard.append(message["type"])
            return message

        async def work() -> str:
            await asyncio.sleep(10)
            return "never"

        record = Record()
        request = Request({"type": "http", "method": "POST", "headers": []}, receive)
        answer = await GatewayApp.answer_unless_gone(None, request, record, work())  # type: ignore[arg-type]
        assert heard == ["http.request", "http.disconnect"]
        return answer, record.reasons, len(asyncio.all_tasks()) - 1

    assert asyncio.run(scenario()) == (None, [], 0)  # the caller charges and records the cut call (GatewayApp.cut)


def test_a_receive_that_fails_leaves_the_call_to_answer() -> None:
    async def scenario() -> tuple[Any, bool, int]:
        async def receive() -> dict[str, Any]:
            raise OSError("the server could not say")

        async def work() -> str:
            await asyncio.sleep(0.02)
            return "answer"

        request = Request({"type": "http", "method": "POST", "headers": []}, receive)
        answer = await GatewayApp.answer_unless_gone(None, request, Record(), work())  # type: ignore[arg-type]
        await asyncio.sleep(0)
        return answer, asyncio.current_task().cancelling() == 0, len(asyncio.all_tasks()) - 1  # type: ignore[union-attr]

    assert asyncio.run(scenario()) == ("answer", True, 0)


def test_a_stopped_watch_is_cancelled_and_fires_nothing_after() -> None:
    async def scenario() -> tuple[bool, bool, int]:
        left = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await left.wait()
            return {"type": "http.disconnect"}

        watcher = DisconnectWatcher(receive)
        await asyncio.sleep(0)
        stopped = watcher.stop()
        left.set()  # the client leaves after the answer was taken: too late to cancel anything
        await asyncio.sleep(0.01)
        return stopped, watcher.fired, len(asyncio.all_tasks()) - 1

    assert asyncio.run(scenario()) == (False, False, 0)


class EventReceive:
    """A receive() as uvicorn's: after the body, it waits on an asyncio.Event until the client leaves."""

    def __init__(self, *, needs_a_task: bool = False, bare_yield: bool = False) -> None:
        self.left = asyncio.Event()
        self.needs_a_task = needs_a_task
        self.bare_yield = bare_yield
        self.calls = 0

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        if self.bare_yield:
            await asyncio.sleep(0)
        await self.left.wait()
        if self.needs_a_task and asyncio.current_task() is None:
            raise RuntimeError("no current task")  # what a receive built on task-scoped primitives would do
        return {"type": "http.disconnect"}


def test_a_receive_waiting_on_futures_is_stepped_without_a_task_and_fires() -> None:
    async def scenario() -> tuple[bool, bool, bool, int, bool]:
        receive = EventReceive()

        async def work() -> str:
            await asyncio.sleep(10)
            return "never"

        task = asyncio.current_task()
        watcher = DisconnectWatcher(receive)  # type: ignore[arg-type]
        stepped = watcher.stepped is not None and watcher.watch is None and len(asyncio.all_tasks()) == 1
        asyncio.get_running_loop().call_later(0.01, receive.left.set)
        with contextlib.suppress(asyncio.CancelledError):
            await work()
        fired = watcher.stop()
        return stepped, fired, watcher.fired, receive.calls, task is not None and task.cancelling() == 0

    assert asyncio.run(scenario()) == (True, True, True, 1, True)


def test_a_stopped_stepped_watch_closes_its_receive_and_leaves_no_waiter() -> None:
    async def scenario() -> tuple[bool, int, bool, int]:
        receive = EventReceive()
        watcher = DisconnectWatcher(receive)  # type: ignore[arg-type]
        waiting = len(receive.left._waiters)  # type: ignore[attr-defined]
        stopped = watcher.stop()
        receive.left.set()
        await asyncio.sleep(0.01)
        return stopped, waiting, watcher.fired, len(receive.left._waiters)  # type: ignore[attr-defined]

    assert asyncio.run(scenario()) == (False, 1, False, 0)


def test_what_cannot_be_stepped_here_is_watched_by_a_task_as_before() -> None:
    # A bare yield hands the coroutine to a Task; a receive that fails when resumed outside a task gets
    # a fresh receive() in a Task. Both still cancel the call when the client leaves.
    async def scenario(receive: EventReceive) -> tuple[bool, bool, int]:
        async def work() -> str:
            await asyncio.sleep(10)
            return "never"

        watcher = DisconnectWatcher(receive)  # type: ignore[arg-type]
        asyncio.get_running_loop().call_later(0.01, receive.left.set)
        with contextlib.suppress(asyncio.CancelledError):
            await work()
        fired = watcher.stop()
        await asyncio.sleep(0)
        return fired, watcher.watch is not None, len(asyncio.all_tasks()) - 1

    assert asyncio.run(scenario(EventReceive(bare_yield=True))) == (True, True, 0)
    needs_a_task = EventReceive(needs_a_task=True)
    assert asyncio.run(scenario(needs_a_task)) == (True, True, 0)
    assert needs_a_task.calls == 2  # the stepped one failed on resuming; the Task's own receive() answered


def test_under_uvicorn_the_watch_is_stepped_and_a_disconnect_still_cancels_the_upstream(
    tmp_path: Any, monkeypatch: Any
) -> None:
    # uvicorn's receive() waits on an asyncio.Event: the fast path, never the Task (counted here), and
    # the client leaving mid-call still closes the upstream request and records the turn as cancelled.
    from .gateway_harness import gateway_before
    from .stalling_upstream import StallingUpstream

    tasks: list[object] = []
    general = DisconnectWatcher._in_a_task
    monkeypatch.setattr(DisconnectWatcher, "_in_a_task", lambda self, *a: (tasks.append(a), general(self, *a)))
    stalling = StallingUpstream(None)  # reads the request, never answers
    harness = gateway_before(tmp_path / "home", stalling)
    try:
        _, token = harness.issue()
        harness.post_and_leave("/v1/messages", f"x-api-key: {token}",
                               {"model": "anthropic:claude-haiku-4-5", "max_tokens": 50,
                                "messages": [{"role": "user", "content": "hi"}]}, stalling)
        assert [e.payload["reason"] for e in harness.recorded("turn.cancelled")] == ["client_disconnect"]
        assert tasks == []
    finally:
        harness.stop()


def test_a_server_that_answers_at_once_forever_is_listened_past_only_so_often() -> None:
    # A non-conforming receive() that answers an empty http.request at once, without end: the watch
    # listens past MAX_MESSAGES_PAST of them, then stops listening; no recursion without end, no Task
    # spinning, and the call still gets its answer. Both paths: stepped here, and a Task (a bare yield).
    async def scenario(bare_yield: bool) -> tuple[str, int, bool, bool, int]:
        asked = 0

        async def receive() -> dict[str, Any]:
            nonlocal asked
            asked += 1
            if bare_yield:
                await asyncio.sleep(0)
            return {"type": "http.request", "body": b"", "more_body": False}

        watcher = DisconnectWatcher(receive)
        answer = await asyncio.sleep(0.02, result="answer")
        stopped = watcher.stop()
        await asyncio.sleep(0)
        return answer, asked, stopped, watcher.fired, len(asyncio.all_tasks()) - 1

    assert MAX_MESSAGES_PAST == 8
    assert asyncio.run(scenario(bare_yield=False)) == ("answer", MAX_MESSAGES_PAST + 1, False, False, 0)
    assert asyncio.run(scenario(bare_yield=True)) == ("answer", MAX_MESSAGES_PAST + 1, False, False, 0)
