"""A real `metis serve` app on 127.0.0.1 (uvicorn in a thread) over a Runtime whose providers
answer from recorded traffic, plus a raw WebSocket client that can stall on purpose."""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import uvicorn
from support_servers import API_KEYS, Reply, ScriptedTransport
from weather_tool import WeatherTool

from metis_core.agent.runtime import Runtime
from metis_core.events.bus import EventBus
from metis_core.server.access import ServerAccess
from metis_core.server.app import build_app
from metis_core.server.launch_secret import LaunchSecret

if TYPE_CHECKING:
    from .conftest import Served


def scripted_runtime(home: Path, script: ScriptedTransport, weather: WeatherTool,
                     database: str | None = None) -> Runtime:
    """`database`: a postgresql:// URL for the runtime's store (SQLite in `home` when None)."""
    runtime = Runtime(home=home, client=script.model_client(), bus=EventBus(mode="strict"),
                      configured_providers=set(API_KEYS), db_path=database)  # type: ignore[arg-type]  # the stores take a URL as well as a path
    runtime.tools.register(weather)
    return runtime


class LiveServer:
    """uvicorn serving the app on an ephemeral 127.0.0.1 port, in a daemon thread."""

    def __init__(self, runtime: Runtime | None, workspace: Path, *, access: ServerAccess | None = None,
                 client_queue: int = 1_000, app: Any = None) -> None:
        assert runtime is not None or app is not None
        self.app = app or build_app(runtime, access=access, workspace=workspace,  # type: ignore[arg-type]
                                    client_queue=client_queue)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                ws="websockets-sansio", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="test-uvicorn", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        self.port: int = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.ws_url = f"ws://127.0.0.1:{self.port}/ws/events"
        self.cookies: dict[str, str] = {}
        """The local user's launch cookie, got the way a browser gets it (empty when the app has none)."""
        launch = launch_secret_of(self.app)
        if launch is not None:
            answer = httpx.get(launch.link(self.url), timeout=10)
            assert answer.status_code == 303 and answer.headers["location"] == "/", answer.text
            self.cookies = dict(answer.cookies)

    def launch_url(self) -> str:
        """A fresh one-time link, as `metis serve` prints it."""
        launch = launch_secret_of(self.app)
        assert launch is not None
        return launch.link(self.url)

    @property
    def cookie_header(self) -> dict[str, str]:
        return {"cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}

    def client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client holding the launch cookie: the local user without a key."""
        return httpx.Client(base_url=self.url, cookies=self.cookies, timeout=10, **kwargs)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def launch_secret_of(app: Any) -> LaunchSecret | None:
    """The launch secret of a `metis serve` app, or of the one mounted in a gateway (`--web`)."""
    context = getattr(app.state, "context", None)
    if context is not None:
        return context.access.launch  # type: ignore[no-any-return]
    for route in getattr(app, "routes", []):
        inner = getattr(route, "app", None)
        if inner is not None and getattr(getattr(inner, "state", None), "context", None) is not None:
            return inner.state.context.access.launch  # type: ignore[no-any-return]
    return None


class StallingSocket:
    """A WebSocket client written on a bare socket with a tiny receive buffer: it subscribes, then
    never reads again, so the server's sends back up (a stalled browser tab, a frozen laptop)."""

    def __init__(self, port: int, subscription: dict[str, Any], cookie: str = "") -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /ws/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           + (f"Cookie: {cookie}\r\n" if cookie else "") +
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            response += self.sock.recv(1)
        assert response.startswith(b"HTTP/1.1 101"), response
        self._send_text(json.dumps(subscription))

    def _send_text(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        assert len(data) < 126
        frame = bytes([0x81, 0x80 | len(data)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(frame)

    def close(self) -> None:
        self.sock.close()


TOOL_TURN = ["turn.started", "route.decided", "llm.call_started", "llm.call_completed", "tool.called",
             "tool.confirmation_requested", "tool.confirmation_resolved", "tool.completed", "llm.call_started",
             "llm.call_completed", "turn.completed"]


def sse_frames(response: httpx.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    event, data = "", ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif not line and event:
            yield event, json.loads(data)
            event, data = "", ""


def script_weather_turn(served: Served) -> None:
    served.script.script("anthropic", [Reply.fixture("anthropic", "stream__tool_use_input_json_delta.sse"),
                                       Reply.fixture("anthropic", "stream__text_basic.sse")])


def chat_turn(served: Served, answer: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    with served.server.client() as http:
        session_id = http.post("/api/chat/sessions", json={"title": "weather"}).json()["session"]["id"]
        frames: list[tuple[str, dict[str, Any]]] = []
        with http.stream("POST", f"/api/chat/sessions/{session_id}/messages",
                         json={"text": "What's the weather in SF?"}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            for kind, data in sse_frames(response):
                frames.append((kind, data))
                if kind == "tool.confirmation_requested":
                    waiting = http.get("/api/chat/confirmations").json()["waiting"]
                    request_id = data["payload"]["confirmation_request_id"]
                    assert [w["request_id"] for w in waiting] == [request_id]
                    answered = http.post(f"/api/chat/confirmations/{request_id}", json={"answer": answer})
                    assert answered.status_code == 200
                if kind == "done":
                    break
    return session_id, frames
