"""DisconnectWatcher: a task of `receive()` itself with a done callback, as the looping coroutine was.

It listens on past anything but `http.disconnect`, fires only on a disconnect, and a `receive` that
fails leaves the call alone (nothing to cancel for) and no task behind.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request

from metis_core.gateway.app import DisconnectWatcher, GatewayApp


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

    assert asyncio.run(scenario()) == (None, ["the client disconnected before the answer"], 0)


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
