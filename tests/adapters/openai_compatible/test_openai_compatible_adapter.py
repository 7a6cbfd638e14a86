"""The generic OpenAI-compatible adapter: quirk flags from capabilities, keyless servers, reasoning_content.

Recorded OpenAI chat traffic is served as if from a local server (vLLM, llama.cpp and LM Studio
speak the same wire format); the quirks are declared the way a user's config declares them.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from fixture_files import read_bytes
from mock_http import MockServer
from openai_chat_testkit import FixedCapabilities, final_message, json_response, sse_response, validate_with_sdk

from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.client import ModelClient
from metis_core.adapters.openai_compatible.adapter import OpenAICompatibleAdapter
from metis_core.adapters.registry import adapter_class
from metis_core.messages import (
    Message,
    MessageMetadata,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
    system_message,
    tool_result_message,
    user_message,
)
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.framing import decode_all
from metis_core.transport.retry import RetryPolicy
from metis_core.transport.wire import WireResponse

MODEL = "openai_compatible:mistral-large-latest"
MISTRAL = AdapterCapabilities(
    tool_id_style="alnum9", supports_stream_usage=False, supports_developer_role=False, max_tokens_field="max_tokens"
)


def keyless_client(response: httpx.Response, caps: AdapterCapabilities) -> tuple[ModelClient, MockServer]:
    server = MockServer([response])
    transport = httpx.MockTransport(server)
    client = ModelClient(
        http_client=httpx.Client(transport=transport),
        async_http_client=httpx.AsyncClient(transport=transport),
        base_urls={"openai_compatible": "http://127.0.0.1:8000/v1"},
        prices=None,
        retry=RetryPolicy(max_retries=0),
        registry=FixedCapabilities(caps),  # type: ignore[arg-type]
    )
    return client, server


def test_registry_resolves_the_compatible_adapter() -> None:
    assert adapter_class("openai_compatible") is OpenAICompatibleAdapter


def test_no_authorization_header_when_no_key_is_configured() -> None:
    client, server = keyless_client(json_response(read_bytes("openai_chat", "response__text.json")), MISTRAL)
    message = client.complete([user_message("weather?")], MODEL)
    request = server.requests[0]
    assert "authorization" not in request.headers
    assert str(request.url) == "http://127.0.0.1:8000/v1/chat/completions"
    assert message.metadata.provider == "openai_compatible" and message.text().startswith("I'm unable")
    assert OpenAICompatibleAdapter().auth_headers("gsk_key") == {"Authorization": "Bearer gsk_key"}


def test_no_stream_options_when_the_server_rejects_stream_usage() -> None:
    client, server = keyless_client(sse_response(read_bytes("openai_chat", "stream__tool_call_single.sse")), MISTRAL)
    events = list(client.stream([user_message("weather?")], MODEL))
    sent = orjson.loads(server.requests[0].content)
    assert sent["stream"] is True and "stream_options" not in sent
    assert final_message(events).tool_uses()[0].input == {"city": "New York City"}


def assistant(*blocks: Any) -> Message:
    return Message(
        role=Role.ASSISTANT,
        content=list(blocks),
        metadata=MessageMetadata(
            model=MODEL,
            provider="openai_compatible",
            routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=MODEL, reason="t"),
            usage=Usage(),
        ),
    )


def build(caps: AdapterCapabilities, messages: list[Message], **options: Any) -> dict[str, Any]:
    adapter = OpenAICompatibleAdapter(FixedCapabilities(caps))  # type: ignore[arg-type]
    return adapter.to_wire(messages, [], AdapterOptions(model=MODEL, **options)).body


def test_mistral_quirks_nine_alnum_ids_system_role_and_max_tokens() -> None:
    use = ToolUseBlock(id="tu_01HZZZZZZZZZZZZZZZZZZZZZZQ", name="divide", input={"a": 1})
    history = [system_message("terse"), user_message("go"), assistant(use), tool_result_message(use.id, "1")]
    body = build(MISTRAL, history, max_tokens=64)
    call_id = body["messages"][2]["tool_calls"][0]["id"]
    assert len(call_id) == 9 and call_id.isalnum() and body["messages"][3]["tool_call_id"] == call_id
    assert body["messages"][0]["role"] == "system" and body["max_tokens"] == 64
    validate_with_sdk(body)


def test_a_server_issued_nine_character_id_goes_back_unchanged() -> None:
    context = RequestContext(model=MODEL)
    body = read_bytes("openrouter", "response__tool_calls.json")  # Mistral upstream: id "3sniiMddS"
    reply = OpenAICompatibleAdapter().from_wire_response(WireResponse(200, body), context)
    history = [user_message("divide"), reply, tool_result_message(reply.tool_uses()[0].id, "0.27")]
    adapter = OpenAICompatibleAdapter(FixedCapabilities(MISTRAL))  # type: ignore[arg-type]
    wire = adapter.to_wire(history, [], AdapterOptions(model=MODEL), context.tool_ids).body
    assert wire["messages"][1]["tool_calls"][0]["id"] == "3sniiMddS" == wire["messages"][2]["tool_call_id"]


def test_max_completion_tokens_when_declared_and_developer_when_allowed() -> None:
    caps = AdapterCapabilities(max_tokens_field="max_completion_tokens", supports_developer_role=True)
    body = build(caps, [system_message("terse"), user_message("go")], max_tokens=10, stream=True)
    assert body["max_completion_tokens"] == 10 and body["messages"][0]["role"] == "developer"
    assert body["stream_options"] == {"include_usage": True}


def test_reasoning_content_becomes_thinking_and_is_never_sent_back() -> None:
    chunks = [
        {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "2+2 is "}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"reasoning_content": "4."}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": "stop"}]},
        {"id": "c", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 5, "prompt_cache_hit_tokens": 8}},
    ]
    body = b"".join(b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    context = RequestContext(model="openai_compatible:deepseek-reasoner")
    events = list(OpenAICompatibleAdapter().stream_response_sync(decode_all(body, "sse"), context))
    message = final_message(events)
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert isinstance(message.content[0], ThinkingBlock) and message.content[0].text == "2+2 is 4."
    assert message.metadata.usage is not None and message.metadata.usage.cached_input_tokens == 8
    wire = build(AdapterCapabilities(), [user_message("2+2?"), message, user_message("3+3?")])
    assert wire["messages"][1] == {"role": "assistant", "content": "4"}


def test_the_documented_config_declares_a_named_server(tmp_path: Any) -> None:
    from metis_core.config import load_config
    from metis_core.models.registry import ModelRegistry

    (tmp_path / "config.yaml").write_text(
        "providers:\n"
        "  openai_compatible:\n"
        "    base_url: https://api.mistral.ai/v1\n"
        "models:\n"
        "  openai_compatible:mistral-large-latest:\n"
        "    tool_id_style: alnum9\n"
        "    supports_stream_usage: false\n"
        "aliases:\n"
        "  mistral-large: openai_compatible:mistral-large-latest\n"
    )
    config = load_config(tmp_path, environ={})
    registry = ModelRegistry.load(config)
    assert config.base_url("openai_compatible") == "https://api.mistral.ai/v1"
    assert registry.parse("mistral-large") == [MODEL]
    caps = registry.capabilities(MODEL)
    assert (caps.tool_id_style, caps.supports_stream_usage, caps.supports_developer_role) == ("alnum9", False, False)
    assert config.require_api_key("openai_compatible") is None  # keyless is allowed
