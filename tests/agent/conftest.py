"""An agent Runtime wired to scripted providers that answer with recorded traffic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support_servers import API_KEYS, BASE_URLS, ScriptedTransport
from weather_tool import WeatherTool

from metis_core.adapters.client import ModelClient
from metis_core.agent.confirmation import ConfirmationAnswer, ConfirmationRequest
from metis_core.agent.runtime import Runtime
from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event
from metis_core.transport.retry import RetryPolicy


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
        sync, asynchronous = self.script.clients()
        client = ModelClient(http_client=sync, async_http_client=asynchronous, base_urls=BASE_URLS,
                             api_keys=API_KEYS, retry=RetryPolicy(max_retries=0))
        runtime = Runtime(home=self.home, client=client, bus=EventBus(mode="strict"), confirmer=self.confirmer,
                          configured_providers=set(API_KEYS))
        runtime.tools.register(self.weather)
        return runtime

    def events(self, session_id: str) -> list[Event]:
        self.runtime.bus.flush()
        self.runtime.trace.flush()
        return self.runtime.trace.replay(session_id)

    def requests_to(self, host: str) -> list[Any]:
        return [body for h, _, body, _ in self.script.requests if h == host]


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "routing.yaml").write_text("default: anthropic:claude-haiku-4-5\n")
    h = Harness(tmp_path / "home", workspace)
    yield h
    h.runtime.close()
