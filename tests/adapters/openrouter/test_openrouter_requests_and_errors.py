"""OpenRouter requests (every sample rebuilt), reasoning replay to the same origin only, errors.

`request__tool_result_followup.json` is LIVE-RESERIALIZED and its tools carry `"strict": true`,
which ToolDefinition does not hold: the semantic comparison removes `strict` and nothing else.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import orjson
import pytest
from fixture_files import is_live_verbatim, read_bytes, read_json, wire_files
from openai_chat_testkit import FixedCapabilities, chat_client, json_response, validate_with_sdk

from metis_core.adapters._common.lossy import forget_logged_drops
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.adapters.openrouter.adapter import OpenRouterAdapter
from metis_core.errors import AuthenticationError, InvalidRequestError, ProviderError, RateLimitError
from metis_core.messages import Message, tool_result_message, user_message
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.wire import WireResponse

MODEL = "openrouter:anthropic/claude-sonnet-4.5"


def adapter(caps: AdapterCapabilities | None = None, **kwargs: Any) -> OpenRouterAdapter:
    return OpenRouterAdapter(FixedCapabilities(caps or AdapterCapabilities()), **kwargs)  # type: ignore[arg-type]


def request_samples() -> list[str]:
    return [p.name for p in wire_files("openrouter") if "request" in p.name and not p.name.endswith(".txt")]


def without_strict(body: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(body)
    for tool in body.get("tools", []):
        tool["function"].pop("strict", None)
    return body


@pytest.mark.parametrize("name", request_samples())
def test_recorded_request_is_rebuilt(name: str) -> None:
    body = read_json("openrouter", name)
    ids = ToolIdMap()
    caps = AdapterCapabilities(supports_stream_usage="stream_options" in body)
    read = adapter(caps).read_request(body, tool_ids=ids)
    rebuilt = adapter(caps).to_wire(read.messages, read.tools, read.options, ids).body
    if is_live_verbatim("openrouter", name):
        assert rebuilt == body
    else:
        assert rebuilt == without_strict(body)
    validate_with_sdk(rebuilt)


def test_long_upstream_tool_ids_go_back_unchanged() -> None:
    body = read_json("openrouter", "request__tool_result_followup.json")
    ids = ToolIdMap()
    read = adapter().read_request(body, tool_ids=ids)
    rebuilt = adapter().to_wire(read.messages, read.tools, read.options, ids).body
    assert rebuilt["messages"][1]["tool_calls"][0]["id"] == "tool_insert_level_with_spaces_3ZiChYzj8xER8HixJe7W"


def test_reasoning_options_and_provider_routing_and_headers_are_sent() -> None:
    client, server = chat_client("openrouter", json_response(read_bytes("openrouter", "response__tool_calls.json")))
    client._adapters["openrouter"] = adapter(referer="https://metis.example", title="metis")
    options = AdapterOptions(
        model=MODEL, reasoning_effort="high", extra={"provider": {"order": ["anthropic"], "allow_fallbacks": False}}
    )
    client.complete([user_message("hi")], MODEL, options=options)
    sent = orjson.loads(server.requests[0].content)
    assert sent["reasoning"] == {"effort": "high"}
    assert sent["provider"] == {"order": ["anthropic"], "allow_fallbacks": False}
    headers = server.requests[0].headers
    assert headers["http-referer"] == "https://metis.example" and headers["x-title"] == "metis"
    assert headers["authorization"] == "Bearer sk-test-SECRET-42"
    budget = adapter().to_wire([user_message("hi")], [], AdapterOptions(model=MODEL, thinking_budget_tokens=2048))
    assert budget.body["reasoning"] == {"max_tokens": 2048}


def reply_with_reasoning(context: RequestContext) -> Message:
    body = read_bytes("openrouter", "response__reasoning_details_anthropic_signature.json")
    return OpenRouterAdapter().from_wire_response(WireResponse(200, body), context)


def test_reasoning_details_replay_unmodified_to_the_same_origin() -> None:
    context = RequestContext(model=MODEL, session_id="sess_or")
    reply = reply_with_reasoning(context)
    history = [user_message("Reply with ok"), reply, user_message("again")]
    wire = adapter().to_wire(history, [], AdapterOptions(model=MODEL), context.tool_ids)
    original = read_json("openrouter", "response__reasoning_details_anthropic_signature.json")
    sent = wire.body["messages"][1]
    assert sent["reasoning_details"] == original["choices"][0]["message"]["reasoning_details"]
    assert sent["content"] == "ok" and wire.dropped == []


def test_reasoning_is_dropped_and_logged_for_another_model_or_provider(caplog: pytest.LogCaptureFixture) -> None:
    forget_logged_drops()
    context = RequestContext(model=MODEL, session_id="sess_or")
    reply = reply_with_reasoning(context)
    history = [user_message("Reply with ok"), reply, user_message("again")]
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        other = adapter().to_wire(history, [], AdapterOptions(model="openrouter:openai/gpt-4o"))
        openai = OpenAIChatAdapter(FixedCapabilities(AdapterCapabilities())).to_wire(  # type: ignore[arg-type]
            history, [], AdapterOptions(model="openai:gpt-4o")
        )
    assert "reasoning_details" not in other.body["messages"][1]
    assert "reasoning_details" not in openai.body["messages"][1]
    assert [d.block_type for d in other.dropped] == ["thinking"]
    assert "signed by openrouter/chat_completions/anthropic/claude-sonnet-4.5" in other.dropped[0].reason
    assert {r.adapter for r in caplog.records} == {"openrouter/chat_completions", "openai/chat_completions"}  # type: ignore[attr-defined]


def test_reasoning_from_a_stream_replays_the_merged_details() -> None:
    from metis_core.transport.framing import decode_all

    context = RequestContext(model=MODEL)
    events = list(
        OpenRouterAdapter().stream_response_sync(
            decode_all(read_bytes("openrouter", "stream__reasoning_details_deltas.sse"), "sse"), context
        )
    )
    reply = events[-1].message
    wire = adapter().to_wire(
        [user_message("What is 2+2?"), reply, user_message("and 3+3?")], [], AdapterOptions(model=MODEL)
    )
    [detail] = wire.body["messages"][1]["reasoning_details"]
    assert detail["signature"].startswith("Et0BCkgI") and detail["text"].endswith("2+2 equals 4.")


def test_tool_results_after_openrouter_calls_keep_the_upstream_id() -> None:
    context = RequestContext(model="openrouter:mistralai/mistral-small")
    body = read_bytes("openrouter", "response__tool_calls.json")
    reply = OpenRouterAdapter().from_wire_response(WireResponse(200, body), context)
    history = [user_message("divide"), reply, tool_result_message(reply.tool_uses()[0].id, "0.27")]
    wire = adapter().to_wire(history, [], AdapterOptions(model="openrouter:mistralai/mistral-small"), context.tool_ids)
    assert wire.body["messages"][2]["tool_call_id"] == "3sniiMddS"


# --- errors ----------------------------------------------------------------------------------

ERRORS: dict[str, tuple[int, type[ProviderError], float | None]] = {
    "docs_example__error_availability_capacity_429.json": (429, RateLimitError, 40.0),
    "docs_example__error_before_stream_400.json": (400, InvalidRequestError, None),
    "docs_example__error_guardrail_403.json": (403, AuthenticationError, None),
    "docs_example__error_provider_rate_limit_429.json": (429, RateLimitError, None),
    "error__429_provider_rate_limited.json": (429, RateLimitError, None),
}


def test_every_error_sample_has_expectations() -> None:
    assert sorted(p.name for p in wire_files("openrouter") if "error_" in p.name and p.suffix == ".json") == sorted(
        ERRORS
    )


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_recorded_error_maps_to_its_class(name: str) -> None:
    status, cls, retry_after = ERRORS[name]
    client, _ = chat_client("openrouter", json_response(read_bytes("openrouter", name), status))
    with pytest.raises(ProviderError) as caught:
        client.complete([user_message("hi")], MODEL)
    assert type(caught.value) is cls and caught.value.status == status
    assert caught.value.retry_after == retry_after


def test_upstream_raw_message_is_included() -> None:
    error = adapter().classify_error(
        WireResponse(429, read_bytes("openrouter", "error__429_provider_rate_limited.json"))
    )
    assert "temporarily rate-limited upstream" in str(error) and error.retryable


def test_payment_required_is_not_retryable() -> None:
    error = adapter().classify_error(WireResponse(402, b'{"error": {"code": 402, "message": "Insufficient credits"}}'))
    assert isinstance(error, AuthenticationError) and not error.retryable and "credit" in str(error)


def test_an_image_to_an_uncatalogued_openrouter_model_of_a_vision_vendor_is_sent() -> None:
    from metis_core import get_adapter
    from metis_core.adapters._common.tool_ids import ToolIdMap
    from metis_core.adapters.base import AdapterOptions
    from metis_core.messages import ImageBlock, ImageSource, Message, Role, TextBlock

    image = ImageBlock(source=ImageSource(kind="url", data="https://example.test/cat.png"), media_type="image/png")
    history = [Message(role=Role.USER, content=[TextBlock(text="what is this?"), image])]
    model = "openrouter:anthropic/claude-opus-4.7"  # not in the registry
    wire = get_adapter("openrouter").to_wire(history, [], AdapterOptions(model=model), ToolIdMap())
    assert wire.dropped == []
    assert "https://example.test/cat.png" in str(wire.body["messages"])
