"""One realistic recorded session for the export tests, built by the agent runtime over recorded traffic.

Five turns: a tool call the user allows, a tool call the user denies, a fallback (Anthropic 529,
OpenAI 429, Gemini answers), a turn cancelled mid-stream, and a plain answer after it; then the
session ends. Every reply is a recording from ../shared/fixtures served over the real HTTP/SSE path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import fixtures_root
from support_servers import API_KEYS, BASE_URLS, HangingBody, Reply, ScriptedTransport
from weather_tool import WeatherTool

from metis_core.adapters.client import ModelClient
from metis_core.agent.confirmation import ConfirmationAnswer, ConfirmationRequest
from metis_core.agent.runtime import Runtime
from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event
from metis_core.export import SessionRecording, load_recording
from metis_core.messages import (
    Message,
    TextBlock,
    TextDelta,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore
from metis_core.transport.retry import RetryPolicy

CHAIN_POLICY = """
default: resilient
chains:
  resilient: [anthropic:claude-haiku-4-5, openai:gpt-4o, gemini:gemini-2.5-flash]
"""

USER_TEXTS = ("What's the weather in SF?", "and in Paris, quickly?", "and tomorrow?", "tell me a story",
              "ok, shorter please")


class Confirmer:
    def __init__(self, answers: list[ConfirmationAnswer]) -> None:
        self.answers = answers

    async def __call__(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        return self.answers.pop(0)


@dataclass
class RecordedSession:
    session_id: str
    db_path: Path
    events: list[Event]
    messages: list[Message]
    turn_ids: list[str]


async def record_session(home: Path, workspace: Path) -> RecordedSession:
    (home / "routing.yaml").write_text(CHAIN_POLICY)
    script = ScriptedTransport()
    hang_next = {"armed": False}
    story = (fixtures_root() / "wire" / "anthropic" / "stream__text_basic.sse").read_bytes()

    def handler(request: httpx.Request) -> httpx.Response:
        if hang_next["armed"]:
            hang_next["armed"] = False
            script.handler(request)
            head = story[: story.index(b"content_block_stop")]
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=HangingBody(head))
        return script.handler(request)

    client = ModelClient(http_client=httpx.Client(transport=httpx.MockTransport(handler)),
                         async_http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
                         base_urls=BASE_URLS, api_keys=API_KEYS, retry=RetryPolicy(max_retries=0))
    confirmer = Confirmer([ConfirmationAnswer("allow", "once"), ConfirmationAnswer("deny")])
    runtime = Runtime(home=home, client=client, bus=EventBus(mode="strict"), confirmer=confirmer,
                      configured_providers=set(API_KEYS))
    runtime.tools.register(WeatherTool())
    turn_ids: list[str] = []
    try:
        session = runtime.sessions.create(workspace)
        weather = [Reply.fixture("anthropic", "stream__tool_use_input_json_delta.sse"),
                   Reply.fixture("anthropic", "stream__text_basic.sse")]
        script.script("anthropic", weather)
        turn_ids.append((await runtime.turns.run(session, USER_TEXTS[0])).turn_id)
        script.script("anthropic", [Reply(r.status, r.body, r.headers) for r in weather])
        turn_ids.append((await runtime.turns.run(session, USER_TEXTS[1])).turn_id)

        script.script("anthropic", [Reply.fixture("anthropic", "error__529_overloaded_error.json", 529)])
        script.script("openai", [Reply.fixture("openai_chat", "error__429_rate_limit_exceeded.json", 429)])
        script.script("gemini", [Reply.fixture("gemini", "stream__text.sse")])
        turn_ids.append((await runtime.turns.run(session, USER_TEXTS[2])).turn_id)

        hang_next["armed"] = True
        first_text = asyncio.Event()
        task = asyncio.create_task(runtime.turns.run(
            session, USER_TEXTS[3], on_stream=lambda ev: first_text.set() if isinstance(ev, TextDelta) else None))
        await asyncio.wait_for(first_text.wait(), 5)
        task.cancel()
        cancelled = await task
        assert cancelled.cancelled
        turn_ids.append(cancelled.turn_id)

        script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
        turn_ids.append((await runtime.turns.run(session, USER_TEXTS[4])).turn_id)
        runtime.sessions.end(session)
        runtime.bus.flush()
        runtime.trace.flush()
        events = runtime.trace.replay(session.id)
        messages = runtime.store.load_messages(session.id)
    finally:
        runtime.close()
    return RecordedSession(session.id, runtime.db_path, events, messages, turn_ids)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> RecordedSession:
    root = tmp_path_factory.mktemp("export_session")
    (root / "home").mkdir()
    (root / "workspace").mkdir()
    return asyncio.run(record_session(root / "home", root / "workspace"))


@pytest.fixture
def stores(recorded: RecordedSession) -> Iterator[tuple[SessionStore, TraceStore]]:
    sessions, trace = SessionStore(recorded.db_path), TraceStore(recorded.db_path)
    yield sessions, trace
    trace.close()
    sessions.close()


def openwop_schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """run-event.schema.json and run-event-payloads.subset.schema.json, read from tests/data/shared/openwop."""
    folder = fixtures_root().parent / "openwop"
    envelope = json.loads((folder / "run-event.schema.json").read_text())
    payloads = json.loads((folder / "run-event-payloads.subset.schema.json").read_text())
    return envelope, payloads


def conversation_texts(messages: list[Message]) -> set[str]:
    """Every piece of conversation content in the stored messages: text, tool inputs, tool results."""
    texts: set[str] = set()
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                texts.add(block.text)
            elif isinstance(block, ToolUseBlock):
                texts.update(str(value) for value in block.input.values())
            elif isinstance(block, ToolResultBlock):
                texts.update(b.text for b in block.content if isinstance(b, TextBlock))
    return {text.strip() for text in texts if text.strip()}


@pytest.fixture
def recording(recorded: RecordedSession, stores: tuple[SessionStore, TraceStore]) -> SessionRecording:
    return load_recording(recorded.session_id, *stores)


def by_type(events: list[Event] | tuple[Event, ...], event_type: str) -> list[Event]:
    return [event for event in events if event.type == event_type]
