"""The gateway app's async generators: a stream's frames (`GatewayApp.stream` answers with them)
and the app's lifespan (`create_app`), beside gateway/app.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import anyio

from metis_core.errors import MetisError
from metis_core.gateway.service import upstream_failure

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from metis_core.gateway.app import GatewayApp
    from metis_core.gateway.call_record import CallRecord
    from metis_core.gateway.continued_call import ContinuedCall
    from metis_core.gateway.service import GatewayService
    from metis_core.gateway.shapes.base import StreamWriter
    from metis_core.messages import Message, StreamEvent

log = logging.getLogger("metis_core.gateway")


async def stream_frames(app: GatewayApp, record: CallRecord, run: ContinuedCall, writer: StreamWriter,
                        first: StreamEvent, events: AsyncGenerator[StreamEvent, None]) -> AsyncIterator[bytes]:
    """A streamed answer's frames, from its `first` event on: a failure after the first ends the
    stream with the shape's error frame; a client gone mid-stream records the partial answer as
    cancelled and closes the upstream response; the full answer is charged and recorded. A stream cut
    by the client or the upstream is charged for what it used (call_budget.py)."""
    final: Message | None = None
    event: StreamEvent = first
    try:
        while True:
            if event.type == "message_complete":
                final = event.message
            frame = writer.feed(event)
            if frame:
                yield frame
            event = await anext(events)
    except StopAsyncIteration:
        pass
    except (asyncio.CancelledError, GeneratorExit):
        tracker = run.tracker  # what the upstream call in flight streamed (earlier calls are stored)
        partial = tracker.cancelled_message(record.session_id, record.model) if tracker.has_content() else None
        app.cut(record, run.budget, partial, "the client disconnected mid-stream")
        with anyio.CancelScope(shield=True):  # close the upstream response even while cancelled
            await events.aclose()
        raise
    except Exception as error:
        if not isinstance(error, MetisError):
            log.exception("gateway stream %s failed", record.session_id, exc_info=error)
        tracker = run.tracker
        run.budget.cut(tracker.cancelled_message(record.session_id, record.model) if tracker.has_content() else None)
        record.errored(error)
        failure = upstream_failure(error)
        yield writer.fail(failure.status, failure.kind, failure.message)
        return
    if final is not None:
        app.finish(record, final, run)
    else:  # the upstream ended without a final message: nothing priced, what it streamed is charged
        tracker = run.tracker
        run.budget.cut(tracker.cancelled_message(record.session_id, record.model) if tracker.has_content() else None)


def closing_lifespan(service: GatewayService) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The app's lifespan: nothing to open; at shutdown, `service` closed (the record written,
    upstream connections and stores closed)."""

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await service.aclose()

    return lifespan
