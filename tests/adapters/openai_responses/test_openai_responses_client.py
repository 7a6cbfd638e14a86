"""Every Responses sample through the real path: ModelClient -> httpx (MockTransport) -> SSE framing -> adapter.

The mock transport serves the recorded bytes (streams in small pieces, split mid-line and
mid-UTF-8) and records what was sent, so the request side is checked too: URL, Bearer auth, a
body the official SDK types accept. Nothing reaches the network.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from adapters.openai_responses.responses_oracle import PROVIDER, validate_with_sdk
from fixture_files import plain_wire_files, read_bytes
from mock_http import BASE_URL, serve, sse_response

from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.errors import AuthenticationError, InvalidRequestError, ProviderError
from metis_core.messages import (
    Message,
    MessageComplete,
    MessageStatus,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolDefinition,
    user_message,
)
from metis_core.transport.framing import decode_all
from metis_core.transport.wire import WireResponse

API_KEY = "sk-test-responses-SECRET-4242"
MODEL = "openai_responses:gpt-4.1"
WEATHER = ToolDefinition(
    name="get_current_weather",
    description="Get the current weather",
    input_schema={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)


def history() -> list[Message]:
    return [user_message("What is the weather like in Boston today?", session_id="sess_c")]


def json_response(status: int, body: bytes) -> httpx.Response:
    return httpx.Response(
        status, content=body, headers={"content-type": "application/json", "x-request-id": "req_client_1"}
    )


def sent(server: Any) -> dict[str, Any]:
    request: httpx.Request = server.requests[-1]
    assert str(request.url) == f"{BASE_URL}/responses"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body: dict[str, Any] = orjson.loads(request.content)
    validate_with_sdk(body)
    assert API_KEY not in request.content.decode()
    return body


def text_and_tools(message: Message) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    return message.text(), [(u.name, u.input) for u in message.tool_uses()]


@pytest.mark.parametrize(
    "name", [p.name for p in plain_wire_files(PROVIDER) if p.name.startswith(("response__", "docs_example__response"))]
)
def test_every_response_sample_through_model_client_complete(name: str) -> None:
    body = read_bytes(PROVIDER, name)
    client, server = serve(json_response(200, body), provider=PROVIDER, api_key=API_KEY)
    message = client.complete(history(), MODEL, tools=[WEATHER], session_id="sess_c")
    direct = OpenAIResponsesAdapter().from_wire_response(WireResponse(200, body), RequestContext(model=MODEL))
    assert text_and_tools(message) == text_and_tools(direct)
    assert message.status is MessageStatus.COMPLETE and message.session_id == "sess_c"
    request = sent(server)
    assert request["model"] == "gpt-4.1" and "stream" not in request
    assert request["input"] == "What is the weather like in Boston today?"
    assert request["tools"][0]["name"] == "get_current_weather"


def stream_events(body: bytes) -> list[StreamEvent]:
    return list(OpenAIResponsesAdapter().stream_response_sync(decode_all(body, "sse"), RequestContext(model=MODEL)))


@pytest.mark.parametrize("name", [p.name for p in plain_wire_files(PROVIDER, "stream")])
def test_every_stream_sample_through_model_client_stream_sync_and_async(name: str) -> None:
    body = read_bytes(PROVIDER, name)
    expected = stream_events(body)[-1]
    assert isinstance(expected, MessageComplete)
    client, server = serve(sse_response(body, chunk_size=29), provider=PROVIDER, api_key=API_KEY)
    events = list(client.stream(history(), MODEL, options=AdapterOptions(model=MODEL, max_tokens=64)))
    last = events[-1]
    assert isinstance(last, MessageComplete) and not any(isinstance(e, StreamError) for e in events)
    assert text_and_tools(last.message) == text_and_tools(expected.message)
    assert last.message.metadata.stop_reason == expected.message.metadata.stop_reason
    request = sent(server)
    assert request["stream"] is True and request["max_output_tokens"] == 64


@pytest.mark.parametrize("name", [p.name for p in plain_wire_files(PROVIDER, "stream")])
async def test_every_stream_sample_through_model_client_astream(name: str) -> None:
    body = read_bytes(PROVIDER, name)
    expected = stream_events(body)[-1]
    assert isinstance(expected, MessageComplete)
    client, _ = serve(sse_response(body, chunk_size=31), provider=PROVIDER, api_key=API_KEY)
    events = [event async for event in client.astream(history(), MODEL)]
    last = events[-1]
    assert isinstance(last, MessageComplete)
    assert text_and_tools(last.message) == text_and_tools(expected.message)


@pytest.mark.parametrize(
    ("name", "status", "cls"),
    [
        ("error__400_decimal_below_min_value.json", 400, InvalidRequestError),
        ("error__400_model_not_found.json", 400, InvalidRequestError),
        ("error__400_reasoning_item_without_following_item.json", 400, InvalidRequestError),
        ("error__401_invalid_api_key.json", 401, AuthenticationError),
    ],
)
def test_every_error_sample_through_model_client_raises_its_class(name: str, status: int, cls: type) -> None:
    client, _ = serve(json_response(status, read_bytes(PROVIDER, name)), provider=PROVIDER, api_key=API_KEY)
    with pytest.raises(cls) as caught:
        client.complete(history(), MODEL)
    error: ProviderError = caught.value
    assert error.status == status and error.request_id == "req_client_1"
    assert API_KEY not in str(error) and API_KEY not in repr(error.__dict__)


def test_a_connection_dropped_mid_stream_ends_with_an_error_event_and_a_partial_message() -> None:
    body = read_bytes(PROVIDER, "stream__text.sse")
    cut = body[: body.index(b"event: response.output_text.done")]
    client, _ = serve(
        sse_response(cut, chunk_size=50, fail=httpx.ReadError("connection reset")), provider=PROVIDER, api_key=API_KEY
    )
    events = list(client.stream(history(), MODEL))
    assert any(isinstance(e, StreamError) and e.retryable for e in events)
    last = events[-1]
    assert isinstance(last, MessageComplete) and last.message.status is MessageStatus.PARTIAL
    assert last.message.text() == "".join(e.text for e in events if isinstance(e, TextDelta))
    assert last.message.text().startswith("Hello! 🌍 How can I assist you")
