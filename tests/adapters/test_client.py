"""ModelClient over httpx.MockTransport: pre-checks, auth at send time, streams that break, retries."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml
from fixture_files import read_bytes
from mock_http import API_KEY, BASE_URL, MODEL, ChunkedBody, MockServer, serve, split, sse_response

from metis_core.adapters.client import ModelClient
from metis_core.config import load_config
from metis_core.errors import (
    CapabilityMismatchError,
    MissingAPIKeyError,
    NetworkError,
    ServerError,
    TruncatedStreamError,
)
from metis_core.messages import (
    ImageBlock,
    ImageSource,
    Message,
    MessageComplete,
    MessageStatus,
    Role,
    StreamError,
    StreamEvent,
    TextBlock,
    ToolDefinition,
    system_message,
    user_message,
)
from metis_core.models.registry import ModelRegistry
from metis_core.transport.retry import RetryPolicy

HISTORY = [user_message("hello")]
TEXT_STREAM = "stream__text_basic.sse"
TOOL_STREAM = "stream__tool_use_with_whitespace_padding.sse"


def ok_text() -> httpx.Response:
    return httpx.Response(200, content=read_bytes("anthropic", "response__text.json"))


def final(events: list[StreamEvent]) -> Message:
    assert isinstance(events[-1], MessageComplete)
    message: Message = events[-1].message
    return message


def registry_with(home: Path, models: dict[str, Any]) -> ModelRegistry:
    (home / "config.yaml").write_text(yaml.safe_dump({"models": models}), encoding="utf-8")
    return ModelRegistry.load(load_config(home))


# --- sending ---------------------------------------------------------------------------------


def test_complete_sends_the_built_body_with_auth_headers_added_at_send_time() -> None:
    client, server = serve(ok_text())
    message = client.complete(HISTORY, model=MODEL, session_id="sess_1")
    assert message.text().startswith("The weather in SF")
    (request,) = server.requests
    assert str(request.url) == f"{BASE_URL}/v1/messages"
    assert request.headers["x-api-key"] == API_KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    body = orjson.loads(request.content)
    messages = [{"role": "user", "content": "hello"}]
    assert body == {"model": "claude-sonnet-4-5", "max_tokens": 16_384, "messages": messages}
    assert API_KEY not in repr(client)


async def test_acomplete_and_astream_use_the_async_client() -> None:
    client, server = serve(ok_text())
    message = await client.acomplete(HISTORY, model=MODEL)
    assert message.metadata.usage is not None and message.metadata.usage.input_tokens == 705
    client, server = serve(sse_response(read_bytes("anthropic", TEXT_STREAM)))
    events = [e async for e in client.astream(HISTORY, model=MODEL)]
    assert final(events).text() == "Hello there!"
    assert orjson.loads(server.requests[0].content)["stream"] is True


def test_base_url_and_key_come_from_the_environment_when_not_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METIS_ANTHROPIC_BASE_URL", "http://127.0.0.1:7777/proxy/")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    server = MockServer([ok_text()])
    client = ModelClient(http_client=httpx.Client(transport=httpx.MockTransport(server)), prices=None)
    client.complete(HISTORY, model=MODEL)
    assert str(server.requests[0].url) == "http://127.0.0.1:7777/proxy/v1/messages"
    assert server.requests[0].headers["x-api-key"] == "sk-ant-from-env"


def test_key_and_base_url_read_once_are_read_again_when_the_environment_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("METIS_ANTHROPIC_BASE_URL", "http://127.0.0.1:7777/first")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-first-key")
    server = MockServer([ok_text(), ok_text(), ok_text()])
    client = ModelClient(http_client=httpx.Client(transport=httpx.MockTransport(server)), prices=None)
    reads: list[str] = []
    read_auth_headers = client._read_auth_headers

    def counting(provider: str, adapter: Any) -> dict[str, str]:
        reads.append(provider)
        return read_auth_headers(provider, adapter)

    monkeypatch.setattr(client, "_read_auth_headers", counting)
    client.complete(HISTORY, model=MODEL)
    client.complete(HISTORY, model=MODEL)
    assert reads == ["anthropic"]  # kept while the environment is unchanged
    monkeypatch.setenv("METIS_ANTHROPIC_BASE_URL", "http://127.0.0.1:7777/second")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-second-key")
    client.complete(HISTORY, model=MODEL)
    assert reads == ["anthropic", "anthropic"]
    sent = [(str(r.url), r.headers["x-api-key"]) for r in server.requests]
    assert sent == [("http://127.0.0.1:7777/first/v1/messages", "sk-ant-first-key")] * 2 + [
        ("http://127.0.0.1:7777/second/v1/messages", "sk-ant-second-key")]


def test_missing_key_fails_before_any_request() -> None:
    server = MockServer([ok_text()])
    client = ModelClient(http_client=httpx.Client(transport=httpx.MockTransport(server)), prices=None)
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        client.complete(HISTORY, model=MODEL)
    assert server.requests == []


def test_latency_is_measured_from_request_start() -> None:
    def slow(request: httpx.Request) -> httpx.Response:
        time.sleep(0.05)
        return ok_text()

    client = ModelClient(
        http_client=httpx.Client(transport=httpx.MockTransport(slow)),
        base_urls={"anthropic": BASE_URL}, api_keys={"anthropic": API_KEY}, prices=None,
    )
    usage = client.complete(HISTORY, model=MODEL).metadata.usage
    assert usage is not None and usage.latency_ms >= 50


def test_network_error_is_retried_then_succeeds() -> None:
    calls: list[int] = []

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ConnectError("connection refused")
        return ok_text()

    sleeps: list[float] = []
    client = ModelClient(
        http_client=httpx.Client(transport=httpx.MockTransport(flaky)),
        base_urls={"anthropic": BASE_URL}, api_keys={"anthropic": API_KEY}, prices=None,
        retry=RetryPolicy(max_retries=2, sleep=sleeps.append, random=lambda: 0.5),
    )
    assert client.complete(HISTORY, model=MODEL).text().startswith("The weather")
    assert len(calls) == 2 and sleeps == [0.5]


async def test_cancellation_propagates_and_is_not_retried() -> None:
    calls: list[int] = []

    async def hang(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        await asyncio.sleep(10)
        return ok_text()

    client = ModelClient(
        async_http_client=httpx.AsyncClient(transport=httpx.MockTransport(hang)),
        base_urls={"anthropic": BASE_URL}, api_keys={"anthropic": API_KEY}, prices=None,
        retry=RetryPolicy(max_retries=3),
    )
    task = asyncio.create_task(client.acomplete(HISTORY, model=MODEL))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls == [1]


# --- capability pre-check ------------------------------------------------------------------


def test_swap_to_a_model_without_image_support_fails_before_any_http_call(tmp_path: Path) -> None:
    registry = registry_with(tmp_path, {"anthropic:claude-text-only": {"supports_images": False}})
    image = ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgo="), media_type="image/png")
    history = [Message(role=Role.USER, content=[TextBlock(text="look"), image])]
    client, server = serve(ok_text(), registry=registry)
    with pytest.raises(CapabilityMismatchError) as raised:
        client.complete(history, model="anthropic:claude-text-only")
    assert raised.value.capability == "supports_images"
    assert "1 image(s)" in str(raised.value)
    with pytest.raises(CapabilityMismatchError):
        client.stream(history, model="anthropic:claude-text-only")
    assert server.requests == []
    client.complete(history, model=MODEL)  # the image model takes the same history
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("overrides", "capability", "kwargs"),
    [
        ({"supports_tools": False}, "supports_tools",
         {"tools": [ToolDefinition(name="t", description="d", input_schema={"type": "object", "properties": {}})]}),
        ({"supports_system_prompt": False}, "supports_system_prompt", {"history": [system_message("be brief")]}),
        ({"max_context_tokens": 10}, "max_context_tokens", {"history": [user_message("word " * 200)]}),
    ],
)
def test_capability_mismatches_are_named_and_nothing_is_sent(
    tmp_path: Path, overrides: dict[str, Any], capability: str, kwargs: dict[str, Any]
) -> None:
    registry = registry_with(tmp_path, {"anthropic:claude-limited": overrides})
    client, server = serve(ok_text(), registry=registry)
    history = [*kwargs.pop("history", []), *HISTORY]
    with pytest.raises(CapabilityMismatchError) as raised:
        client.complete(history, model="anthropic:claude-limited", **kwargs)
    assert raised.value.capability == capability
    assert server.requests == []


def test_structured_output_to_a_model_without_it_is_refused() -> None:
    from metis_core.adapters.base import AdapterOptions

    client, server = serve(ok_text())
    opts = AdapterOptions(model="anthropic:claude-3-opus-latest", response_format={"name": "r", "schema": {}})
    with pytest.raises(CapabilityMismatchError, match="supports_structured_output"):
        client.complete(HISTORY, options=opts)
    assert server.requests == []


# --- streams that break --------------------------------------------------------------------


def test_stream_body_cut_off_mid_way_ends_with_error_event_and_partial_message() -> None:
    body = read_bytes("anthropic", TOOL_STREAM)
    cut = body[: body.index(b"input_json_delta") + 40]
    client, _ = serve(httpx.Response(200, stream=ChunkedBody(split(cut, 50))))
    events = list(client.stream(HISTORY, model=MODEL))
    (error,) = [e for e in events if isinstance(e, StreamError)]
    assert error.error_class == "network" and error.retryable
    message = final(events)
    assert message.status is MessageStatus.PARTIAL
    assert message.text().startswith("<thinking>\nThe get_weather tool is relevant")
    assert message.tool_uses() == []


@pytest.mark.parametrize("failure", [httpx.ReadError("reset by peer"), httpx.RemoteProtocolError("incomplete body")])
def test_connection_dropped_after_content_yields_error_event_not_an_exception(failure: Exception) -> None:
    body = read_bytes("anthropic", TEXT_STREAM)
    head = body[: body.index(b"event: content_block_stop")]
    client, _ = serve(httpx.Response(200, stream=ChunkedBody(split(head, 40), fail=failure)))
    events = list(client.stream(HISTORY, model=MODEL))
    (error,) = [e for e in events if isinstance(e, StreamError)]
    assert error.error_class == "network" and "connection dropped" in error.message
    message = final(events)
    assert (message.status, message.text()) == (MessageStatus.PARTIAL, "Hello there!")


async def test_async_connection_drop_after_content_also_ends_partial() -> None:
    body = read_bytes("anthropic", TEXT_STREAM)
    head = body[: body.index(b"event: content_block_stop")]
    client, _ = serve(httpx.Response(200, stream=ChunkedBody(split(head, 40), fail=httpx.ReadError("reset"))))
    events = [e async for e in client.astream(HISTORY, model=MODEL)]
    assert [e.type for e in events[-2:]] == ["error", "message_complete"]
    assert final(events).status is MessageStatus.PARTIAL


def test_connection_dropped_before_any_content_is_raised_so_fallback_can_retry() -> None:
    body = read_bytes("anthropic", TEXT_STREAM)
    head = body[: body.index(b"event: content_block_start")]  # message_start only
    client, server = serve(httpx.Response(200, stream=ChunkedBody([head], fail=httpx.ReadError("reset"))))
    with pytest.raises(TruncatedStreamError) as raised:
        list(client.stream(HISTORY, model=MODEL))
    assert raised.value.retryable and raised.value.retry_count == 0
    assert len(server.requests) == 1


def test_stream_failing_before_content_is_retried_and_then_streams() -> None:
    body = read_bytes("anthropic", TEXT_STREAM)
    sleeps: list[float] = []
    client, server = serve(
        httpx.Response(200, stream=ChunkedBody([body[:30]], fail=httpx.ReadError("reset"))),
        httpx.Response(503, content=b"upstream unavailable"),
        sse_response(body),
        retry=RetryPolicy(max_retries=2, sleep=sleeps.append, random=lambda: 0.5),
    )
    assert final(list(client.stream(HISTORY, model=MODEL))).text() == "Hello there!"
    assert len(server.requests) == 3 and sleeps == [0.5, 1.0]


def test_http_error_on_a_streaming_request_is_raised_classified() -> None:
    client, _ = serve(httpx.Response(529, content=read_bytes("anthropic", "error__529_overloaded_error.json")))
    with pytest.raises(ServerError) as raised:
        list(client.stream(HISTORY, model=MODEL))
    assert raised.value.status == 529 and raised.value.provider_code == "overloaded_error"


def test_network_errors_never_carry_the_api_key() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)  # the request holds the key

    client = ModelClient(
        http_client=httpx.Client(transport=httpx.MockTransport(refuse)),
        base_urls={"anthropic": BASE_URL}, api_keys={"anthropic": API_KEY}, prices=None,
        retry=RetryPolicy(max_retries=0),
    )
    with pytest.raises(NetworkError) as raised:
        client.complete(HISTORY, model=MODEL)
    error = raised.value
    assert API_KEY not in str(error) and API_KEY not in repr(error)
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None:
        chain.append(current)
        current = current.__cause__ or current.__context__
    assert chain == [error]  # nothing reachable from the error holds the httpx request
