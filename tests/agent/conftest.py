"""An agent Runtime wired to scripted providers that answer with recorded traffic."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fixture_files import read_bytes
from support_servers import API_KEYS, HangingBody, ScriptedTransport
from weather_tool import WeatherTool

from metis_core.agent.confirmation import ConfirmationAnswer, ConfirmationRequest
from metis_core.agent.runtime import Runtime
from metis_core.agent.session import Session
from metis_core.agent.turn import TurnResult
from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event
from metis_core.messages import TextDelta


class ScriptedConfirmer:
    def __init__(self) -> None:
        self.answers: list[ConfirmationAnswer] = []
        self.asked: list[ConfirmationRequest] = []

    async def __call__(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        self.asked.append(request)
        return self.answers.pop(0) if self.answers else ConfirmationAnswer("deny")


class Harness:
    def __init__(self, home: Path, workspace: Path) -> None:
        self.home = home
        self.workspace = workspace
        self.script = ScriptedTransport()
        self.confirmer = ScriptedConfirmer()
        self.weather = WeatherTool()
        self.runtime = self.open_runtime()

    def open_runtime(self) -> Runtime:
        runtime = Runtime(home=self.home, client=self.script.model_client(), bus=EventBus(mode="strict"),
                          confirmer=self.confirmer, configured_providers=set(API_KEYS))
        runtime.tools.register(self.weather)
        return runtime

    def events(self, session_id: str) -> list[Event]:
        self.runtime.bus.flush()
        self.runtime.trace.flush()
        return self.runtime.trace.replay(session_id)

    def requests_to(self, host: str) -> list[Any]:
        return [body for h, _, body, _ in self.script.requests if h == host]

    def hang_first_call(self) -> None:
        """The first model call streams the start of stream__text_basic.sse, then hangs; later calls
        are answered from the script (the hung call's request is recorded there too)."""
        body = read_bytes("anthropic", "stream__text_basic.sse")
        head = body[: body.index(b"content_block_stop")]
        original = self.script.handler

        def handler(request: httpx.Request) -> httpx.Response:
            if not self.script.requests:
                original(request)
                return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=HangingBody(head))
            return original(request)

        self.runtime.client._transport._async_client = httpx.AsyncClient(  # type: ignore[attr-defined]
            transport=httpx.MockTransport(handler))

    async def hung_turn(self) -> tuple[Session, asyncio.Task[TurnResult]]:
        """A new session's turn, running as a task, whose model call hangs (`hang_first_call`) once its
        first text has streamed: the session and the task, at that point."""
        self.hang_first_call()
        session = self.runtime.sessions.create(self.workspace)
        first_text = asyncio.Event()
        task = asyncio.create_task(self.runtime.turns.run(
            session, "tell me a story", on_stream=lambda ev: first_text.set() if isinstance(ev, TextDelta) else None))
        await asyncio.wait_for(first_text.wait(), 5)
        return session, task


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "routing.yaml").write_text("default: anthropic:claude-haiku-4-5\n")
    h = Harness(tmp_path / "home", workspace)
    yield h
    h.runtime.close()
