"""Watching for the client leaving while a non-streamed call runs upstream, without a task per call.

`DisconnectWatcher` drives the server's `receive()` itself: it runs the coroutine to the asyncio
future it waits on and resumes it from that future's done callback, as an asyncio Task would step
it, and closes it when the answer is ready. A Task per call cost its creation, its registration in
asyncio's set of tasks and two loop steps to cancel it (docs/gateway.md "What it costs").
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from starlette.types import Receive

MAX_MESSAGES_PAST = 8
"""Messages other than `http.disconnect` a watch listens past before it stops listening. After the body
a conforming server has nothing more to say until the client leaves; one that keeps answering at once
(empty `http.request`s forever) would otherwise be asked again without end: a stack of steps or a
Task per answer, spinning until the upstream answers. The call goes on, unwatched, as with a server
that cannot say."""


class DisconnectWatcher:
    """Cancels the task that made it when the client disconnects (the request body has been read:
    nothing else can come); `stop()` ends the watch and says whether it fired. The cancel it sent is
    taken back (`Task.uncancel`), so the task goes on to answer 499 as if nothing had cancelled it.

    A named fast path: `receive()` is stepped here while it waits on asyncio futures (uvicorn's does,
    through an asyncio.Event). Anything else takes the general path, a Task of `receive()` with a done
    callback: a coroutine that yields something other than an awaited future (a bare `yield`: the Task
    resumes it), and a step that raises (a fresh `receive()` in a Task, which has the task context this
    path lacks; a server that cannot say fails there too, and nothing is cancelled for it)."""

    __slots__ = ("fired", "heard_past", "receive", "stepped", "task", "watch")

    def __init__(self, receive: Receive) -> None:
        self.task = asyncio.current_task()
        self.fired = False
        self.heard_past = 0
        """Messages other than a disconnect listened past so far (at most MAX_MESSAGES_PAST)."""
        self.receive = receive
        self.stepped: tuple[Coroutine[Any, Any, Any], asyncio.Future[Any]] | None = None
        """(the receive() coroutine, the future it waits on) while this watch steps it."""
        self.watch: asyncio.Task[Any] | None = None
        """The general path's Task, when one runs the watch."""
        self._step(receive())  # type: ignore[arg-type]

    # --- the fast path: receive() stepped here ------------------------------------------------

    def _step(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        try:
            waited = coroutine.send(None)
        except StopIteration as returned:
            self.stepped = None
            self._message(returned.value)
            return
        except asyncio.CancelledError:  # the future it waited on was cancelled: as its Task would be
            self.stepped = None
            return
        except Exception:
            self.stepped = None
            self._in_a_task()  # a fresh receive() where the task context it may need exists
            return
        if getattr(waited, "_asyncio_future_blocking", None) is True:  # `await future`, as a Task sees it
            waited._asyncio_future_blocking = False
            self.stepped = (coroutine, waited)
            waited.add_done_callback(self._resume)
            return
        self.stepped = None
        self._in_a_task(coroutine)  # a bare yield: the Task sends it on, as it would have

    def _resume(self, future: asyncio.Future[Any]) -> None:
        stepped = self.stepped
        if stepped is not None and stepped[1] is future:
            self._step(stepped[0])

    def _message(self, message: Any) -> None:
        if not isinstance(message, dict) or message.get("type") != "http.disconnect":
            if isinstance(message, dict) and self._listen_past():  # as client_gone(): not the end, listen on
                self._step(self.receive())  # type: ignore[arg-type]
            return  # not a message at all: the server failed to say (nothing to cancel for)
        self.fired = True
        if self.task is not None:
            self.task.cancel()

    # --- the general path: a Task of receive() ------------------------------------------------

    def _in_a_task(self, coroutine: Coroutine[Any, Any, Any] | None = None) -> None:
        self.watch = asyncio.get_running_loop().create_task(coroutine or self.receive())  # type: ignore[arg-type]
        self.watch.add_done_callback(self._heard)

    def _heard(self, watch: asyncio.Task[Any]) -> None:
        if watch.cancelled() or watch.exception() is not None or watch is not self.watch:
            return  # stopped; or the server failed to say (nothing to cancel for)
        if watch.result()["type"] != "http.disconnect":  # as client_gone(): not the end, listen on
            if self._listen_past():
                self._in_a_task()
            return
        self.fired = True
        if self.task is not None:
            self.task.cancel()

    def _listen_past(self) -> bool:
        """Count one more message listened past; False once the bound is reached (stop listening)."""
        self.heard_past += 1
        return self.heard_past <= MAX_MESSAGES_PAST

    def stop(self) -> bool:
        """Stop watching; True when the client left (and this task was cancelled for it)."""
        if not self.fired:
            stepped, watch = self.stepped, self.watch
            if stepped is not None:
                self.stepped = None
                coroutine, future = stepped
                future.remove_done_callback(self._resume)
                try:  # noqa: SIM105 - not contextlib.suppress: a `with` costs ~2,000 instructions, every call
                    coroutine.close()  # GeneratorExit at its wait: its `finally` runs (an Event forgets the waiter)
                except RuntimeError:
                    pass  # it ignored GeneratorExit: nothing more to do for it
            if watch is not None:
                watch.remove_done_callback(self._heard)  # cheaper than a callback scheduled only to return
                watch.cancel()
            return False
        if self.task is not None:
            self.task.uncancel()
        return True
