"""A recorded two-turn session (a tool turn and a plain turn on Anthropic) and a runtime to replay it.

The original runs through the real agent loop over recorded Anthropic streams; replays script the
target model's replies (recordings, or recordings with the tool arguments changed) on the same
ScriptedTransport, so every replayed call goes through the real HTTP and stream parsing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support_servers import API_KEYS, Reply, ScriptedTransport

from metis_core.agent.runtime import Runtime
from metis_core.agent.tools.base import ToolContext, ToolOutcome
from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event
from metis_core.messages import SideEffects, ToolDefinition

ORIGINAL_MODEL = "anthropic:claude-haiku-4-5"
USER_TEXTS = ("What's the weather in SF?", "Say hello")


class WeatherTool:
    definition = ToolDefinition(
        name="get_weather", description="Current weather for a location.",
        input_schema={"type": "object", "properties": {"location": {"type": "string"}, "city": {"type": "string"}}},
        side_effects=SideEffects.NETWORK, requires_workspace=False,
    )

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        self.calls.append(tool_input)
        return ToolOutcome(f"{tool_input.get('location') or tool_input.get('city')}: 73°F, clear")


class ReplayHarness:
    def __init__(self, home: Path, workspace: Path) -> None:
        self.home, self.workspace = home, workspace
        self.script = ScriptedTransport()
        self.weather = WeatherTool()
        self.runtime = Runtime(home=home, client=self.script.model_client(), bus=EventBus(mode="strict"),
                               approve_everything=True, configured_providers=set(API_KEYS))
        self.runtime.tools.register(self.weather)

    async def record_original(self) -> str:
        self.script.script("anthropic", [Reply.fixture("anthropic", "stream__tool_use_input_json_delta.sse"),
                                         Reply.fixture("anthropic", "stream__text_basic.sse"),
                                         Reply.fixture("anthropic", "stream__text_basic.sse")])
        calls_before = len(self.weather.calls)
        session = self.runtime.sessions.create(self.workspace)
        for text in USER_TEXTS:
            result = await self.runtime.turns.run(session, text)
            assert result.error is None, result.error
        self.runtime.sessions.end(session)
        assert self.weather.calls[calls_before:] == [{"location": "Paris"}]
        return session.id

    def events(self, session_id: str) -> list[Event]:
        self.runtime.bus.flush()
        self.runtime.trace.flush()
        return self.runtime.trace.replay(session_id)

    def bodies(self, host: str) -> list[Any]:
        return [body for h, _, body, _ in self.script.requests if h == host]


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[ReplayHarness]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "routing.yaml").write_text(f"default: {ORIGINAL_MODEL}\n")
    h = ReplayHarness(home, workspace)
    yield h
    h.runtime.close()
