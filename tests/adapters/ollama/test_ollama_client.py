"""Every Ollama sample through the real path: ModelClient -> httpx (MockTransport) -> NDJSON framing -> adapter.

Nothing reaches the network: the mock transport serves the recorded bytes and records what was sent.
Streaming bodies are served as iterators of small pieces, so lines arrive split across reads (and
because the transport's `iter_raw` refuses a MockTransport body given as one `bytes` object).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest
from fixture_files import read_bytes, read_json, wire_files

from metis_core.adapters.client import ModelClient
from metis_core.errors import NetworkError, ServerError
from metis_core.messages import Message, MessageComplete, MessageStatus, StreamError, StreamEvent, user_message
from metis_core.transport.retry import RetryPolicy

BASE = "http://127.0.0.1:11434"
NDJSON = {"content-type": "application/x-ndjson"}


class Server:
    """A MockTransport handler that answers every request with one canned response."""

    def __init__(self, status: int, body: bytes | Iterator[bytes], headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, headers or {"content-type": "application/json"}
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self.status, content=self.body, headers=self.headers)

    @property
    def sent(self) -> dict[str, Any]:
        body: dict[str, Any] = orjson.loads(self.requests[-1].content)
        return body


def client(handler: Callable[[httpx.Request], httpx.Response], api_key: str | None = None) -> ModelClient:
    return ModelClient(
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        base_urls={"ollama": BASE},
        api_keys={"ollama": api_key} if api_key else None,
        prices=None,
        retry=RetryPolicy(max_retries=0),
    )


def history() -> list[Message]:
    return [user_message("why is the sky blue?", session_id="sess_c")]


TEXT_CHUNKS = ("docs_example__chat_stream_chunk.json", "docs_example__chat_stream_final_chunk.json")
TOOL_CHUNKS = ("docs_example__chat_stream_tool_call_chunk.json", "docs_example__chat_stream_tools_final_chunk.json")


def in_pieces(body: bytes, size: int = 7) -> Iterator[bytes]:
    return (body[i : i + size] for i in range(0, len(body), size))


def streamed(server: Server, model: str) -> list[StreamEvent]:
    return list(client(server).stream(history(), model=model, session_id="sess_c"))


@pytest.mark.parametrize("name", [p.name for p in wire_files("ollama", "response")])
def test_every_response_sample_through_model_client(name: str) -> None:
    recorded = read_json("ollama", name)
    server = Server(200, read_bytes("ollama", name))
    message = client(server).complete(history(), model=f"ollama:{recorded['model']}", session_id="sess_c")
    assert message.status is MessageStatus.COMPLETE
    assert message.text() == recorded["message"]["content"]
    assert [(u.name, u.input) for u in message.tool_uses()] == [
        (c["function"]["name"], c["function"]["arguments"]) for c in recorded["message"].get("tool_calls", [])
    ]
    assert message.metadata.usage is not None
    assert message.metadata.usage.output_tokens == recorded["eval_count"]
    request = server.requests[0]
    assert str(request.url) == f"{BASE}/api/chat" and request.method == "POST"
    assert "authorization" not in request.headers
    assert server.sent == {
        "model": recorded["model"],
        "messages": [{"role": "user", "content": "why is the sky blue?"}],
        "stream": False,
    }


def test_a_configured_key_for_hosted_ollama_goes_as_a_bearer_token() -> None:
    server = Server(200, read_bytes("ollama", "response__chat_text.json"))
    client(server, api_key="hosted-key").complete(history(), model="ollama:llama3.2")
    assert server.requests[0].headers["authorization"] == "Bearer hosted-key"


@pytest.mark.parametrize(
    ("chunks", "text", "tools", "stop"),
    [
        (TEXT_CHUNKS, "The", [], "end_turn"),
        (TOOL_CHUNKS, "", [("get_weather", {"city": "Tokyo"})], "tool_use"),
    ],
)
def test_docs_chat_chunks_stream_through_model_client(
    chunks: tuple[str, ...], text: str, tools: list[Any], stop: str
) -> None:
    body = b"".join(orjson.dumps(read_json("ollama", name)) + b"\n" for name in chunks)
    server = Server(200, in_pieces(body), NDJSON)
    events = streamed(server, "ollama:llama3.2")
    message = events[-1].message  # type: ignore[union-attr]
    assert message.status is MessageStatus.COMPLETE and message.text() == text
    assert [(u.name, u.input) for u in message.tool_uses()] == tools and message.metadata.stop_reason == stop
    assert server.sent["stream"] is True


def test_generate_recording_streams_through_model_client() -> None:
    server = Server(200, in_pieces(read_bytes("ollama", "stream__generate.ndjson")), NDJSON)
    events = streamed(server, "ollama:gemma4")
    assert isinstance(events[-1], MessageComplete)
    assert events[-1].message.text() == "That's a fantastic question!"
    assert events[-1].message.status is MessageStatus.COMPLETE


def test_midstream_error_recording_through_model_client_keeps_the_partial_answer() -> None:
    server = Server(200, in_pieces(read_bytes("ollama", "stream__generate_midstream_error.ndjson")), NDJSON)
    events = streamed(server, "ollama:gemma4")
    [error] = [e for e in events if isinstance(e, StreamError)]
    assert error.error_class == "server_error" and error.message == "an error was encountered while running the model"
    assert events[-1].message.status is MessageStatus.PARTIAL  # type: ignore[union-attr]
    assert events[-1].message.text() == " Yes.Ican"  # type: ignore[union-attr]


def test_an_error_line_before_any_content_is_raised_so_the_caller_can_retry() -> None:
    server = Server(200, in_pieces(b'{"error":"the model failed to generate a response"}\n'), NDJSON)
    with pytest.raises(ServerError, match="failed to generate"):
        streamed(server, "ollama:llama3.2")


def test_the_error_sample_as_an_http_500_raises_server_error() -> None:
    server = Server(500, read_bytes("ollama", "error__body.json"))
    with pytest.raises(ServerError, match="the model failed to generate a response") as caught:
        client(server).complete(history(), model="ollama:llama3.2")
    assert caught.value.status == 500
    with pytest.raises(ServerError):
        streamed(Server(500, in_pieces(read_bytes("ollama", "error__body.json"))), "ollama:llama3.2")


def test_a_truncated_stream_through_model_client_ends_partial() -> None:
    body = orjson.dumps(read_json("ollama", TEXT_CHUNKS[0])) + b"\n"
    events = streamed(Server(200, in_pieces(body), NDJSON), "ollama:llama3.2")
    assert any(isinstance(e, StreamError) and e.error_class == "network" for e in events)
    assert events[-1].message.status is MessageStatus.PARTIAL  # type: ignore[union-attr]


def test_nothing_listening_is_a_network_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    with pytest.raises(NetworkError, match="could not connect"):
        client(refuse).complete(history(), model="ollama:llama3.2")


async def test_async_stream_gives_the_same_message() -> None:
    body = b"".join(orjson.dumps(read_json("ollama", name)) + b"\n" for name in TOOL_CHUNKS)

    async def pieces() -> AsyncIterator[bytes]:
        for piece in in_pieces(body):
            yield piece

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=pieces(), headers=NDJSON)

    async_client = ModelClient(
        async_http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
        base_urls={"ollama": BASE},
        prices=None,
        retry=RetryPolicy(max_retries=0),
    )
    events = [e async for e in async_client.astream(history(), model="ollama:llama3.2")]
    await async_client.aclose()
    message = events[-1].message  # type: ignore[union-attr]
    assert [(u.name, u.input) for u in message.tool_uses()] == [("get_weather", {"city": "Tokyo"})]
