"""Several providers at once over httpx.MockTransport, answering from recorded traffic, failing on cue.

`ScriptedTransport` answers each provider (by host) from its own queue of recorded replies, so
multi-provider tests (fallback chains, cross-provider sessions, the agent loop) drive the real
HTTP, SSE and NDJSON paths of ModelClient without any network. Single-provider tests use mock_http.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
from fixture_files import read_bytes
from mock_http import ChunkedBody, split

from metis_core.adapters.client import ModelClient
from metis_core.transport.retry import RetryPolicy

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


TOOL_USE_RECORDING = "stream__tool_use_input_json_delta.sse"
RECORDED_TOOL_USE_ID = "toolu_01NRLabsLyVHZPKxbKvkfSMn"


def tool_call_stream(name: str, tool_input: Any, tool_use_id: str = RECORDED_TOOL_USE_ID) -> bytes:
    """The recorded Anthropic get_weather tool_use stream, turned into a call of another tool.

    No recording calls our tools, so this keeps the recording's exact framing, usage and event
    order (message_start, ping, caller, input_json_delta fragments) and replaces only the tool
    name, the provider's tool id and the four input fragments.
    """
    body = read_bytes("anthropic", TOOL_USE_RECORDING)
    assert body.count(b'"name":"get_weather"') == 1 and body.count(RECORDED_TOOL_USE_ID.encode()) == 1
    body = body.replace(b'"name":"get_weather"', b'"name":' + json.dumps(name).encode())
    body = body.replace(RECORDED_TOOL_USE_ID.encode(), tool_use_id.encode())
    wanted = json.dumps(tool_input)
    cut = [len(wanted) // 4, len(wanted) // 2, 3 * len(wanted) // 4]
    pieces = [wanted[: cut[0]], wanted[cut[0] : cut[1]], wanted[cut[1] : cut[2]], wanted[cut[2] :]]
    for old, new in zip(['{\\"locati', 'on\\": \\"P', "ar", 'is\\"}'], pieces, strict=True):
        marker = f'"partial_json":"{old}"'.encode()
        assert body.count(marker) == 1, marker
        body = body.replace(marker, b'"partial_json":' + json.dumps(new).encode())
    return body


@dataclass
class Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    held_at: bytes | None = None
    """The body stops just before this marker until `release` is set (a slow upstream mid-stream)."""
    release: threading.Event | None = None

    @classmethod
    def fixture(cls, provider: str, name: str, status: int = 200, **headers: str) -> Reply:
        content_type = "text/event-stream" if name.endswith(".sse") else (
            "application/x-ndjson" if name.endswith(".ndjson") else "application/json")
        return cls(status, read_bytes(provider, name), {"content-type": content_type, **headers})

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Reply:
        return cls(status, json.dumps(payload).encode(), {"content-type": "application/json"})


class HeldBody(ChunkedBody):
    """Sends `chunks`, waits (at most 10 s) for `release`, then sends `rest`."""

    def __init__(self, chunks: list[bytes], rest: list[bytes], release: threading.Event) -> None:
        super().__init__(chunks)
        self.rest, self.release = rest, release

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        self.release.wait(10)
        yield from self.rest

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        await asyncio.to_thread(self.release.wait, 10)
        for chunk in self.rest:
            yield chunk


class HangingBody(httpx.AsyncByteStream):
    """Streams the first part of a recording, then stalls like a slow model until cancelled."""

    def __init__(self, head: bytes) -> None:
        self.head = head

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        await asyncio.Event().wait()


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
        if reply.held_at is not None and reply.release is not None:
            cut = reply.body.index(reply.held_at)
            held = HeldBody(split(reply.body[:cut], 512), split(reply.body[cut:], 512), reply.release)
            return httpx.Response(reply.status, headers=reply.headers, stream=held)
        return httpx.Response(reply.status, headers=reply.headers, stream=ChunkedBody(split(reply.body, 512)))

    def hosts(self) -> list[str]:
        return [host for host, *_ in self.requests]

    def clients(self) -> tuple[httpx.Client, httpx.AsyncClient]:
        return (httpx.Client(transport=httpx.MockTransport(self.handler)),
                httpx.AsyncClient(transport=httpx.MockTransport(self.handler)))

    def model_client(self) -> ModelClient:
        """A ModelClient whose calls, sync and async, this script answers: test keys, no retries."""
        sync, asynchronous = self.clients()
        return ModelClient(http_client=sync, async_http_client=asynchronous, base_urls=BASE_URLS,
                           api_keys=API_KEYS, retry=RetryPolicy(max_retries=0))
