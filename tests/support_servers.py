"""Several providers at once over httpx.MockTransport, answering from recorded traffic, failing on cue.

`ScriptedTransport` answers each provider (by host) from its own queue of recorded replies, so
multi-provider tests (fallback chains, cross-provider sessions, the agent loop) drive the real
HTTP, SSE and NDJSON paths of ModelClient without any network. Single-provider tests use mock_http.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
from fixture_files import read_bytes
from mock_http import ChunkedBody, split

BASE_URLS = {
    "anthropic": "http://anthropic.test",
    "openai": "http://openai.test/v1",
    "openai_responses": "http://openai-responses.test/v1",
    "gemini": "http://gemini.test",
    "ollama": "http://ollama.test",
    "openrouter": "http://openrouter.test/api/v1",
    "openai_compatible": "http://compat.test/v1",
}
API_KEYS = {p: f"test-key-{p}" for p in BASE_URLS if p != "ollama"}


@dataclass
class Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def fixture(cls, provider: str, name: str, status: int = 200, **headers: str) -> Reply:
        content_type = "text/event-stream" if name.endswith(".sse") else (
            "application/x-ndjson" if name.endswith(".ndjson") else "application/json")
        return cls(status, read_bytes(provider, name), {"content-type": content_type, **headers})

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Reply:
        return cls(status, json.dumps(payload).encode(), {"content-type": "application/json"})


class ScriptedTransport:
    """Per-host reply queues; every request is recorded (host, path, parsed JSON body, headers)."""

    def __init__(self) -> None:
        self.queues: dict[str, deque[Reply]] = defaultdict(deque)
        self.requests: list[tuple[str, str, Any, dict[str, str]]] = []

    def script(self, provider: str, replies: Iterable[Reply]) -> None:
        host = httpx.URL(BASE_URLS[provider]).host
        self.queues[host].extend(replies)

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.url.host, request.url.path, body, dict(request.headers)))
        queue = self.queues.get(request.url.host)
        if not queue:
            return httpx.Response(599, json={"error": {"message": f"no scripted reply for {request.url}"}})
        reply = queue.popleft()
        # Delivered in network-sized pieces through a real (unread) byte stream.
        return httpx.Response(reply.status, headers=reply.headers, stream=ChunkedBody(split(reply.body, 512)))

    def hosts(self) -> list[str]:
        return [host for host, *_ in self.requests]

    def clients(self) -> tuple[httpx.Client, httpx.AsyncClient]:
        return (httpx.Client(transport=httpx.MockTransport(self.handler)),
                httpx.AsyncClient(transport=httpx.MockTransport(self.handler)))
