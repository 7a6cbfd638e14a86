"""The WebSocket event stream: `/ws/events`.

Protocol (JSON text frames). The client's first frame is a subscription:
`{"session_ids": [...], "types": [...], "domains": [...], "max_sensitivity": "...", "last_event_id": "..."}`
(every key optional). The server answers `{"kind": "subscribed", "subscription": name, "filter": {...}}`,
then the replay as `{"kind": "event", "event": {...}, "replayed": true}` frames and
`{"kind": "replay_done", "count": n}`, then live events. A client whose queue overflows gets
`{"kind": "dropped", "reason": "queue_overflow"}` (if it still reads) and close code 4008.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import orjson
from starlette.websockets import WebSocket, WebSocketDisconnect

from metis_core.errors import StreamRequestError
from metis_core.events.bus import UnsubscribeReason
from metis_core.events.envelope import Event, Sensitivity
from metis_core.server.client_stream import ClientStream
from metis_core.server.stream_filter import parse_stream_filter
from metis_core.server.wiring import ServerContext

SUBSCRIBE_TIMEOUT = 10.0
"""Seconds a client has, after the handshake, to send its subscription."""
OVERFLOW_CLOSE_CODE = 4008
BAD_REQUEST_CLOSE_CODE = 4400
CLOSE_TIMEOUT = 1.0


def event_json(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json")


def _frame(kind: str, **fields: Any) -> str:
    return orjson.dumps({"kind": kind, **fields}).decode()


async def event_socket(websocket: WebSocket) -> None:
    context: ServerContext = websocket.app.state.context
    clearance: Sensitivity = websocket.scope["state"]["clearance"]
    await websocket.accept()
    try:
        request = json.loads(await asyncio.wait_for(websocket.receive_text(), SUBSCRIBE_TIMEOUT))
        if not isinstance(request, dict):
            raise StreamRequestError("the first frame must be a JSON object (the subscription)")
        stream_filter = parse_stream_filter(request, clearance)
        last_event_id = request.get("last_event_id")
        if last_event_id is not None and not isinstance(last_event_id, str):
            raise StreamRequestError("last_event_id must be the id (a string) of the last event received")
    except WebSocketDisconnect:
        return
    except TimeoutError:
        await websocket.close(BAD_REQUEST_CLOSE_CODE, f"no subscription within {SUBSCRIBE_TIMEOUT:g}s")
        return
    except (StreamRequestError, ValueError) as error:
        await websocket.send_text(_frame("error", detail=str(error)))
        await websocket.close(BAD_REQUEST_CLOSE_CODE)
        return
    stream = ClientStream(context.runtime.bus, context.runtime.trace, stream_filter, capacity=context.client_queue,
                          feed=context.live_feed)
    await stream.start(last_event_id)
    reason = await _serve(websocket, stream)
    await stream.close(reason)


async def _serve(websocket: WebSocket, stream: ClientStream) -> UnsubscribeReason:
    """Run the sender until the client leaves (client_disconnect) or overflows (removed_after_errors)."""
    sender = asyncio.create_task(_send_events(websocket, stream))
    reader = asyncio.create_task(_wait_for_disconnect(websocket))
    overflow = asyncio.create_task(stream.overflow.wait())
    try:
        await asyncio.wait({sender, reader, overflow}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sender, reader, overflow):
            task.cancel()
        await asyncio.gather(sender, reader, overflow, return_exceptions=True)
    if stream.overflowed:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(_tell_dropped(websocket), CLOSE_TIMEOUT)
        return "removed_after_errors"
    return "client_disconnect"


async def _tell_dropped(websocket: WebSocket) -> None:
    await websocket.send_text(_frame("dropped", reason="queue_overflow"))
    await websocket.close(OVERFLOW_CLOSE_CODE, "slow consumer: per-client queue overflowed")


async def _wait_for_disconnect(websocket: WebSocket) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return


async def _send_events(websocket: WebSocket, stream: ClientStream) -> None:
    await websocket.send_text(_frame("subscribed", subscription=stream.name, filter=stream.filter.describe()))
    replay = stream.take_replay()
    for event in replay:
        await websocket.send_text(_frame("event", event=event_json(event), replayed=True))
    await websocket.send_text(_frame("replay_done", count=len(replay)))
    while (batch := await stream.next_batch()) is not None:
        for event in batch:
            await websocket.send_text(_frame("event", event=event_json(event)))
