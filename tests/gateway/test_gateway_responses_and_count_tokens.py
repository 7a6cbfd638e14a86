"""POST /v1/responses (the Responses API, streaming and not, same shape and cross-shape) and
POST /v1/messages/count_tokens, through the official SDKs."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest
from cli.replay_server import ANTHROPIC, Reply

from .gateway_harness import GatewayHarness

RESPONSES = "/v1/responses"
WEATHER = {"type": "function", "name": "get_current_weather", "description": "weather",
           "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}


def client(gateway: GatewayHarness) -> openai.OpenAI:
    _, token = gateway.issue()
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)


def test_responses_text(gateway: GatewayHarness) -> None:
    gateway.upstream.script(RESPONSES, Reply.recording("openai_responses", "response__text.json"))
    answer = client(gateway).responses.create(model="openai_responses:gpt-4o-mini", input="hello")
    assert answer.output_text and answer.status == "completed"
    assert answer.usage is not None and answer.usage.input_tokens > 0
    assert "hello" in json.dumps(gateway.upstream.bodies(RESPONSES)[0]["input"])


def test_responses_function_call_round_trip(gateway: GatewayHarness) -> None:
    gateway.upstream.script(RESPONSES, Reply.recording("openai_responses", "response__function_call.json"),
                            Reply.recording("openai_responses", "response__after_function_call_output.json"))
    sdk = client(gateway)
    first = sdk.responses.create(model="openai_responses:gpt-4.1", input="weather in Boston?",
                                 tools=[WEATHER])  # type: ignore[list-item]
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.call_id == "call_tjEzTywkXuBUO42ugPFnQYqi" and call.name == "get_current_weather"
    second = sdk.responses.create(model="openai_responses:gpt-4.1", tools=[WEATHER], input=[  # type: ignore[list-item]
        {"role": "user", "content": "weather in Boston?"},
        {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.call_id, "output": "{\"temp\": 20}"},
    ])  # fmt: skip
    assert second.output_text
    sent = gateway.upstream.bodies(RESPONSES)[1]["input"]
    assert [item.get("call_id") for item in sent if item.get("type", "").startswith("function_call")] == [
        call.call_id, call.call_id]


@pytest.mark.parametrize("recording", ["stream__text.sse", "stream__function_call_arguments_delta.sse"])
def test_responses_stream_is_accumulated_by_the_sdk(gateway: GatewayHarness, recording: str) -> None:
    gateway.upstream.script(RESPONSES, Reply.recording("openai_responses", recording))
    with client(gateway).responses.stream(model="openai_responses:gpt-4.1", input="go",
                                          tools=[WEATHER]) as stream:  # type: ignore[list-item]
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    if "function_call" in recording:
        [call] = [item for item in final.output if item.type == "function_call"]
        assert isinstance(json.loads(call.arguments), dict)
    else:
        assert final.output_text


def test_responses_client_on_an_anthropic_model(gateway: GatewayHarness) -> None:
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "stream__tool_use_input_json_delta.sse"))
    with client(gateway).responses.stream(model="anthropic:claude-sonnet-4-0", input="weather?", store=False,
                                          tools=[WEATHER]) as stream:  # type: ignore[list-item]
        final = stream.get_final_response()
    [call] = [item for item in final.output if item.type == "function_call"]
    assert call.call_id.startswith("call_") and isinstance(json.loads(call.arguments), dict)
    sent = gateway.upstream.bodies(ANTHROPIC)[0]
    assert "store" not in sent and sent["tools"][0]["name"] == "get_current_weather"


def test_previous_response_id_is_refused_with_what_to_do(gateway: GatewayHarness) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client(gateway).responses.create(model="openai_responses:gpt-4.1", input="more",
                                         previous_response_id="resp_123")
    assert "whole conversation" in caught.value.message
    assert gateway.upstream.requests == []


def test_count_tokens(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    sdk = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    short = sdk.messages.count_tokens(model="anthropic:claude-haiku-4-5", messages=[{"role": "user", "content": "hi"}])
    long = sdk.messages.count_tokens(model="anthropic:claude-haiku-4-5",
                                     messages=[{"role": "user", "content": "hello there " * 200}])
    assert 0 < short.input_tokens < long.input_tokens
    assert gateway.upstream.requests == []
