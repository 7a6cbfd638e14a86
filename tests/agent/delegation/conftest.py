"""A planner and its workers on a scripted Anthropic endpoint that answers from what it is sent.

The endpoint reads each request: a worker request (its system prompt is the worker's) is answered
by the behaviour its task names; a planner request without tool results asks for the planned
delegate calls (several tool_use blocks in one response), and one with tool results answers with
what came back. Streams are generated in the Messages API's SSE framing, so the real adapter runs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from anthropic_sse import anthropic_stream
from support_servers import API_KEYS, BASE_URLS

from metis_core.adapters.client import ModelClient
from metis_core.agent.confirmation import allow_all
from metis_core.agent.delegation.worker import WORKER_SYSTEM_PROMPT
from metis_core.agent.runtime import Runtime
from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event
from metis_core.ids import new_ulid
from metis_core.transport.retry import RetryPolicy

PLANNER_MODEL = "claude-sonnet-4-6"
WORKER_MODEL = "claude-haiku-4-5"


def sse(body: bytes) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


WorkerBehaviour = Callable[[dict[str, Any]], Awaitable[httpx.Response]]


class ScriptedEndpoint:
    def __init__(self) -> None:
        self.plan: list[dict[str, Any]] = []
        self.behaviours: dict[str, WorkerBehaviour] = {}
        self.worker_requests: list[dict[str, Any]] = []
        self.planner_requests: list[dict[str, Any]] = []
        self.worker_started = asyncio.Event()

    async def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        system = _text(body.get("system") or "")
        if WORKER_SYSTEM_PROMPT in system:
            self.worker_requests.append(body)
            self.worker_started.set()
            task = _text(body["messages"][0]["content"])
            for marker, behaviour in self.behaviours.items():
                if marker in task:
                    return await behaviour(body)
            return sse(anthropic_stream(WORKER_MODEL, f"done: {task.splitlines()[1]}"))
        self.planner_requests.append(body)
        last = body["messages"][-1]
        results = [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"] \
            if isinstance(last["content"], list) else []
        if not results:
            uses = [("toolu_" + new_ulid(), "delegate", call) for call in self.plan]
            return sse(anthropic_stream(PLANNER_MODEL, "Splitting the work.", uses))
        summary = " | ".join(_text(r.get("content")) if not isinstance(r.get("content"), str) else r["content"]
                             for r in results)
        return sse(anthropic_stream(PLANNER_MODEL, f"Summary: {summary}", input_tokens=300))


async def answer(text: str, **kw: Any) -> httpx.Response:
    return sse(anthropic_stream(WORKER_MODEL, text, **kw))


class DelegationHarness:
    def __init__(self, tmp: Path, tiers: dict[str, str], **delegation: Any) -> None:
        self.home = tmp / "home"
        self.workspace = tmp / "workspace"
        self.home.mkdir()
        self.workspace.mkdir()
        (self.home / "config.yaml").write_text(yaml.safe_dump({"delegation": {"tiers": tiers, **delegation}}))
        (self.home / "routing.yaml").write_text(f"default: anthropic:{PLANNER_MODEL}\n")
        self.endpoint = ScriptedEndpoint()
        transport = httpx.MockTransport(self.endpoint.handle)
        client = ModelClient(http_client=httpx.Client(transport=transport),
                             async_http_client=httpx.AsyncClient(transport=transport), base_urls=BASE_URLS,
                             api_keys={"anthropic": API_KEYS["anthropic"]}, retry=RetryPolicy(max_retries=0))
        self.runtime = Runtime(home=self.home, client=client, bus=EventBus(mode="strict"), confirmer=allow_all,
                               configured_providers={"anthropic"})

    def events(self, session_id: str) -> list[Event]:
        self.runtime.bus.flush()
        self.runtime.trace.flush()
        return self.runtime.trace.replay(session_id)


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[DelegationHarness]:
    h = DelegationHarness(tmp_path, {"fast": f"anthropic:{WORKER_MODEL}", "deep": "openai:gpt-4o"})
    yield h
    h.runtime.close()
