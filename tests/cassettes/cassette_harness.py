"""Recording and replaying one provider call through real ModelClients over recorded wire traffic.

Each case names a provider, a model and a recorded reply from the shared fixtures. `record()`
serves the reply through httpx.MockTransport (network-sized chunks) with a cassette recording;
`replay_client()` has an HTTP client that fails the test on any request, so replay is offline.
A spy on the SSE/NDJSON decoders keeps the raw bytes the real stream parsing was fed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fixture_files import read_bytes
from pydantic import BaseModel
from support_servers import BASE_URLS, Reply, ScriptedTransport

from metis_core.adapters.client import ModelClient
from metis_core.messages import Message, Role, SideEffects, TextBlock, ToolDefinition
from metis_core.transport import framing  # where Adapter.chunk_decoder finds the decoders, when it is called
from metis_core.transport.framing import NDJSONDecoder, SSEDecoder
from metis_core.transport.retry import RetryPolicy

KEYS = {
    "anthropic": "sk-ant-api03-Zx8Qw2Lm5Np7Rt1Vy4Bc6Df9Gh3Jk0Ls2Mn5Pq8Rs1Tu4Vw7Xy0Za3-AAAAAA",
    "openai": "sk-proj-Qm3Xr8Tz1Wv6Yb4Nc9Hd2Kf7Lg5Jp0Ms3Rt8Uv1Wx6Za4Bc9De2Fg7Hj5",
    "openai_responses": "sk-proj-Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8Ii9Jj0Kk1Ll2Mm3Nn4Oo5Pp6Qq7Rr8",
    "gemini": "AIzaSyD3kF9sQ2mX7pL0vB8nR4tW6yH1cJ5gE0a",
    "openrouter": "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",
}
"""Realistic key shapes, so the scrubber is tested on what real keys look like."""

WEATHER = ToolDefinition(
    name="get_weather", description="Current weather for a location.",
    input_schema={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
    side_effects=SideEffects.NONE, requires_workspace=False,
)


def ndjson(provider: str, *names: str) -> Reply:
    lines = [json.dumps(json.loads(read_bytes(provider, name))) for name in names]
    return Reply(200, ("\n".join(lines) + "\n").encode(), {"content-type": "application/x-ndjson"})


@dataclass(frozen=True)
class Case:
    provider: str
    model: str
    reply: Reply
    stream: bool = True

    @property
    def id(self) -> str:
        return f"{self.model}-{'stream' if self.stream else 'json'}-{len(self.reply.body)}"


def conversation(*texts: str) -> list[Message]:
    return [Message(role=Role.USER, content=[TextBlock(text=t)]) for t in texts]


class Spy:
    """Collects every raw byte chunk fed to an SSE or NDJSON decoder."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fed: list[bytes] = []
        spy = self

        class Spied:
            """Records what the client feeds; finish() ends the last event through feed(), not a received chunk."""

            finishing = False

            def feed(self, data: bytes) -> Any:
                if not self.finishing:
                    spy.fed.append(data)
                return super().feed(data)  # type: ignore[misc]

            def finish(self) -> Any:
                self.finishing = True
                return super().finish()  # type: ignore[misc]

        class SpySSE(Spied, SSEDecoder):
            pass

        class SpyNDJSON(Spied, NDJSONDecoder):
            pass

        monkeypatch.setattr(framing, "SSEDecoder", SpySSE)
        monkeypatch.setattr(framing, "NDJSONDecoder", SpyNDJSON)

    def take(self) -> list[bytes]:
        out, self.fed = self.fed, []
        return out


def offline_clients() -> tuple[httpx.Client, httpx.AsyncClient]:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise AssertionError(f"a replay reached the network: {request.method} {request.url}")

    return httpx.Client(transport=httpx.MockTransport(refuse)), httpx.AsyncClient(transport=httpx.MockTransport(refuse))


def recording_client(path: Path, *replies: tuple[str, Reply], **kwargs: Any) -> tuple[ModelClient, ScriptedTransport]:
    script = ScriptedTransport()
    for provider, reply in replies:
        script.script(provider, [reply])
    sync, asynchronous = script.clients()
    client = ModelClient(http_client=sync, async_http_client=asynchronous, base_urls=BASE_URLS, api_keys=KEYS,
                         prices=None, retry=RetryPolicy(max_retries=0), record=path, **kwargs)
    return client, script


def replay_client(path: Path, **kwargs: Any) -> ModelClient:
    sync, asynchronous = offline_clients()
    kwargs.setdefault("retry", RetryPolicy(max_retries=0))
    return ModelClient(http_client=sync, async_http_client=asynchronous, base_urls=BASE_URLS, api_keys=KEYS,
                       prices=None, replay=path, **kwargs)


CANONICAL_TOOL_ID = re.compile(r"^tu_[0-9A-Z]{26}$")


def comparable(value: Any) -> Any:
    """Stream events / messages as JSON without the per-run ids and clocks metis itself assigns."""
    return _renumber(_comparable(value), {})


def _renumber(value: Any, ids: dict[str, str]) -> Any:
    """metis's own tool-use ids (a fresh ULID per run) replaced by their order of appearance."""
    if isinstance(value, str) and CANONICAL_TOOL_ID.match(value):
        return ids.setdefault(value, f"tool-{len(ids)}")
    if isinstance(value, dict):
        return {_renumber(k, ids): _renumber(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_renumber(v, ids) for v in value]
    return value


def _comparable(value: Any) -> Any:
    if isinstance(value, Message):
        data = value.model_dump(mode="json", exclude={"id", "created_at"})
        data["metadata"].pop("latency_ms", None)
        usage = data["metadata"].get("usage")
        if isinstance(usage, dict):
            usage.pop("latency_ms", None)
        return data
    if isinstance(value, BaseModel):
        data = value.model_dump(mode="json")
        data.pop("latency_ms", None)
        return data
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _comparable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value
