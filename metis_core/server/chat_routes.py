"""Chat over HTTP: start a session, send a message and stream the turn as Server-Sent Events,
answer a pending tool confirmation.

The SSE stream carries the same catalog events the CLI's turn emits (`event: <type>`, `id:` the
event id, `data:` the event JSON), text and thinking as `event: text.delta` / `thinking.delta`,
each stored answer and tool result as `event: message` (the canonical message), and a final
`event: done` with the answer. A client that leaves mid-turn cancels the turn (as Ctrl-C does in the CLI).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from metis_core.agent.session import Session
from metis_core.agent.turn import TurnResult
from metis_core.errors import MetisError, ServeAccessError, ServeError
from metis_core.events.envelope import Sensitivity
from metis_core.events.filters import EventFilter
from metis_core.messages import Message
from metis_core.messages.stream import TextDelta, ThinkingDelta
from metis_core.server.api_routes import clearance_of, context_of, session_json
from metis_core.server.client_stream import ClientStream
from metis_core.server.stream_filter import StreamFilter

TURN_QUEUE = 100_000


def _need_admin(request: Request) -> None:
    if clearance_of(request) is not Sensitivity.PRIVATE:
        raise ServeAccessError("chatting reads and writes private content: it needs a gateway key with scope admin")


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise ServeError("the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise ServeError("the request body must be a JSON object")
    return body


async def start_session(request: Request) -> JSONResponse:
    _need_admin(request)
    context = context_of(request)
    body = await _json_body(request)
    model, title = body.get("model"), body.get("title")
    if (model is not None and not isinstance(model, str)) or (title is not None and not isinstance(title, str)):
        raise ServeError("'model' and 'title' must be strings when given")
    session = context.runtime.sessions.create(context.workspace, model=model, title=title)
    session.confirmation.confirmer = context.confirmations  # asked over HTTP, not on a terminal
    context.chat_sessions[session.id] = session
    await context.runtime.bus.aflush()  # session.created is delivered now, not into the first turn's stream
    record = await asyncio.to_thread(context.runtime.store.get_session, session.id)
    return JSONResponse({"session": session_json(record)}, status_code=201)


def _frame(event: str, data: Any, event_id: str | None = None) -> bytes:
    head = f"event: {event}\n" + (f"id: {event_id}\n" if event_id else "")
    return head.encode() + b"data: " + orjson.dumps(data) + b"\n\n"


async def send_message(request: Request) -> StreamingResponse:
    _need_admin(request)
    context = context_of(request)
    runtime = context.runtime
    body = await _json_body(request)
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ServeError("send the message as {\"text\": \"...\"}")
    session_id = request.path_params["session_id"]
    if session_id in context.running_turns:
        raise ServeError(f"session {session_id} is already running a turn; wait for its `done` event")
    context.running_turns.add(session_id)  # before any await: a second request sees it at once
    try:
        session = context.chat_sessions.get(session_id)
        if session is None:
            session = await asyncio.to_thread(runtime.sessions.resume, session_id, workspace=None)
            session.confirmation.confirmer = context.confirmations
            context.chat_sessions[session_id] = session
        stream = ClientStream(runtime.bus, runtime.trace, StreamFilter(EventFilter(session_ids=[session_id]), None,
                                                                        Sensitivity.PRIVATE),
                              capacity=TURN_QUEUE, name=f"sse-turn:{session_id}")
        await stream.start(None)
    except BaseException:
        context.running_turns.discard(session_id)
        raise
    return StreamingResponse(_turn_frames(request, session, text, stream), media_type="text/event-stream",
                             headers={"cache-control": "no-store"})


async def _turn_frames(request: Request, session: Session, text: str, stream: ClientStream) -> AsyncIterator[bytes]:
    context = context_of(request)
    runtime = context.runtime
    out: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def on_stream(item: object) -> None:
        if isinstance(item, TextDelta):
            out.put_nowait(("text.delta", {"text": item.text}))
        elif isinstance(item, ThinkingDelta):
            out.put_nowait(("thinking.delta", {"text": item.text}))

    def on_message(message: Message) -> None:  # each answer and tool result, as stored
        out.put_nowait(("message", message.model_dump(mode="json")))

    async def pump() -> None:
        while (batch := await stream.next_batch()) is not None:
            for event in batch:
                out.put_nowait(("event", event))

    async def run_turn() -> None:
        result: TurnResult | None = None
        error: str | None = None
        try:
            result = await runtime.turns.run(session, text, on_stream=on_stream, on_message=on_message)
        except MetisError as failure:
            error = str(failure)
        finally:
            await runtime.bus.aflush()  # every event of the turn has reached the stream's queue
            pumping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pumping
            for event in stream.take_queued():
                out.put_nowait(("event", event))
            out.put_nowait(("done", {"answer": result.answer if result else None,
                                     "error": error or (result.error if result else None)}))

    pumping = asyncio.create_task(pump())
    turn = asyncio.create_task(run_turn())
    held: list[bytes] = []  # deltas and messages that come before turn.started has come through the bus wait for it
    started = False
    try:
        while True:
            kind, item = await out.get()
            if kind == "event":
                yield _frame(item.type, item.model_dump(mode="json"), item.id)
                if not started:
                    started = True
                    for frame in held:
                        yield frame
            elif kind != "done" and not started:
                held.append(_frame(kind, item))
            else:
                yield _frame(kind, item)
            if kind == "done":
                break
    finally:
        if not turn.done():  # the client left: a disconnect on the record, not the user's own cancel
            turn.cancel("client_disconnect")
            with contextlib.suppress(asyncio.CancelledError, MetisError):
                await turn
        context.running_turns.discard(session.id)
        await stream.close("explicit")


async def list_confirmations(request: Request) -> JSONResponse:
    _need_admin(request)
    return JSONResponse({"waiting": context_of(request).confirmations.waiting()})


async def answer_confirmation(request: Request) -> JSONResponse:
    _need_admin(request)
    body = await _json_body(request)
    choice = body.get("answer")
    context_of(request).confirmations.answer(request.path_params["request_id"], str(choice))
    return JSONResponse({"answered": request.path_params["request_id"], "answer": choice})


ROUTES = [
    Route("/api/chat/sessions", start_session, methods=["POST"]),
    Route("/api/chat/sessions/{session_id}/messages", send_message, methods=["POST"]),
    Route("/api/chat/confirmations", list_confirmations),
    Route("/api/chat/confirmations/{request_id}", answer_confirmation, methods=["POST"]),
]
