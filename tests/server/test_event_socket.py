"""The WebSocket event stream against a real uvicorn on 127.0.0.1: filters, reconnect with replay,
slow clients dropped without slowing the bus, and refusals."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from event_payload_samples import minimal
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event, Sensitivity
from metis_core.events.filters import EventFilter
from metis_core.events.recorder import EventRecorder
from metis_core.events.subscription import Subscription

from .conftest import Served
from .server_support import LiveServer, StallingSocket


def emit(bus: EventBus, event_type: str, session_id: str) -> Event:
    event = bus.emit_new(event_type, minimal(event_type), session_id=session_id)
    assert event is not None
    return event


async def subscribe(server: LiveServer, **request: Any) -> tuple[ClientConnection, dict[str, Any]]:
    ws = await connect(server.ws_url, additional_headers=server.cookie_header)
    await ws.send(json.dumps(request))
    subscribed = json.loads(await ws.recv())
    assert subscribed["kind"] == "subscribed", subscribed
    done = json.loads(await ws.recv())
    assert done["kind"] == "replay_done"
    return ws, done


async def receive_events(ws: ClientConnection, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    while len(frames) < count:
        frame = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        assert frame["kind"] == "event", frame
        frames.append(frame)
    return frames


async def nothing_more(ws: ClientConnection, wait: float = 0.3) -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(ws.recv(), wait)


async def test_a_subscription_receives_only_its_session_types_domains_and_sensitivity(served: Served) -> None:
    bus = served.runtime.bus
    ws, _ = await subscribe(served.server, session_ids=["sess_a"], domains=["session", "tool"],
                            max_sensitivity="pseudonymous")
    async with ws:
        emit(bus, "session.resumed", "sess_b")  # another session
        emit(bus, "llm.call_started", "sess_a")  # another domain
        emit(bus, "tool.called", "sess_a")  # private: above the asked ceiling
        wanted = emit(bus, "session.resumed", "sess_a")
        frames = await receive_events(ws, 1)
        assert frames[0]["event"]["id"] == wanted.id
        assert frames[0]["event"]["type"] == "session.resumed" and "replayed" not in frames[0]
        await nothing_more(ws)

    ws, _ = await subscribe(served.server, types=["tool.called"])
    async with ws:
        private = emit(bus, "tool.called", "sess_c")
        assert private.sensitivity is Sensitivity.PRIVATE
        assert (await receive_events(ws, 1))[0]["event"]["id"] == private.id  # a local client sees private


async def test_reconnecting_with_the_last_event_id_replays_then_resumes_live_without_gap_or_duplicate(
    served: Served,
) -> None:
    bus = served.runtime.bus
    ws, _ = await subscribe(served.server, session_ids=["sess_r"])
    first = [emit(bus, "session.resumed", "sess_r") for _ in range(5)]
    seen = [f["event"]["id"] for f in await receive_events(ws, 5)]
    assert seen == [e.id for e in first]
    await ws.close()

    missed = [emit(bus, "session.resumed", "sess_r") for _ in range(20)]  # while disconnected
    stop = asyncio.Event()

    async def keep_emitting() -> list[Event]:  # live events race the replay on reconnect
        out: list[Event] = []
        while not stop.is_set():
            out.append(emit(bus, "session.resumed", "sess_r"))
            await asyncio.sleep(0.002)
        return out

    emitter = asyncio.create_task(keep_emitting())
    await asyncio.sleep(0.02)
    ws = await connect(served.server.ws_url, additional_headers=served.server.cookie_header)
    await ws.send(json.dumps({"session_ids": ["sess_r"], "last_event_id": seen[-1]}))
    assert json.loads(await ws.recv())["kind"] == "subscribed"
    frames: list[dict[str, Any]] = []
    while True:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 5))
        if frame["kind"] == "replay_done":
            break
        frames.append(frame)
    assert len(frames) >= 20 and all(f["replayed"] for f in frames)
    await asyncio.sleep(0.1)
    stop.set()
    during = await emitter
    after = [emit(bus, "session.resumed", "sess_r") for _ in range(3)]
    await bus.aflush()
    expected = [e.id for e in (*missed, *during, *after)]
    live_needed = len(expected) - len(frames)
    frames += await receive_events(ws, live_needed)
    await nothing_more(ws)
    await ws.close()
    got = [f["event"]["id"] for f in frames]
    assert got == expected  # everything after the last seen id, in order, once
    assert len(set(got)) == len(got)


async def test_a_stalled_client_is_dropped_with_removed_after_errors_and_the_bus_keeps_its_pace(
    served: Served,
) -> None:
    bus = served.runtime.bus
    lifecycle = EventRecorder()
    bus.subscribe(Subscription(EventFilter(event_types=["bus.subscriber_unregistered"]), lifecycle,
                               "test-lifecycle"))
    healthy, _ = await subscribe(served.server, session_ids=["sess_x"])
    stalled = await asyncio.to_thread(StallingSocket, served.server.port, {"session_ids": ["sess_s"]},
                                    served.server.cookie_header["cookie"])
    try:
        await asyncio.sleep(0.2)  # the server has subscribed the stalled client
        started = time.perf_counter()
        for _ in range(10):  # far more than its 50-event queue plus the socket buffers hold
            for _ in range(2_000):  # in bursts the bus queue (10,000) takes whole
                emit(bus, "session.resumed", "sess_s")
            await bus.aflush(timeout=10)
        elapsed = time.perf_counter() - started
        assert elapsed < 10  # the emitter and the dispatcher never waited for the stalled client
        deadline = time.monotonic() + 5
        while not any(e.payload["reason"] == "removed_after_errors" for e in lifecycle.events):
            assert time.monotonic() < deadline, "the stalled client was never dropped"
            await asyncio.sleep(0.05)
        dropped = [e for e in lifecycle.events if e.payload["reason"] == "removed_after_errors"]
        assert len(dropped) == 1 and dropped[0].payload["subscription_name"].startswith("ws-client:")
        # The healthy client still gets its events.
        mine = emit(bus, "session.resumed", "sess_x")
        assert (await receive_events(healthy, 1))[0]["event"]["id"] == mine.id
    finally:
        stalled.close()
        await healthy.close()


async def test_a_client_that_leaves_is_unsubscribed_as_client_disconnect(served: Served) -> None:
    bus = served.runtime.bus
    lifecycle = EventRecorder()
    bus.subscribe(Subscription(EventFilter(event_types=["bus.subscriber_unregistered"]), lifecycle,
                               "test-lifecycle"))
    ws, _ = await subscribe(served.server)
    await ws.close()
    deadline = time.monotonic() + 5
    while not any(e.payload["reason"] == "client_disconnect" for e in lifecycle.events):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_an_unknown_event_type_is_refused_with_a_message_and_close_code_4400(served: Served) -> None:
    ws = await connect(served.server.ws_url, additional_headers=served.server.cookie_header)
    await ws.send(json.dumps({"types": ["turn.nonsense"]}))
    frame = json.loads(await ws.recv())
    assert frame["kind"] == "error" and "turn.nonsense" in frame["detail"]
    with pytest.raises(ConnectionClosed) as closed:
        await ws.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400


async def test_a_client_that_never_subscribes_is_closed_after_the_subscribe_timeout(
    served: Served, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from metis_core.server import event_socket

    monkeypatch.setattr(event_socket, "SUBSCRIBE_TIMEOUT", 0.2)
    ws = await connect(served.server.ws_url, additional_headers=served.server.cookie_header)
    with pytest.raises(ConnectionClosed) as closed:
        await asyncio.wait_for(ws.recv(), 5)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400
    assert "no subscription" in closed.value.rcvd.reason
