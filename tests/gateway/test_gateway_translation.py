"""Tools, parallel calls, images, thinking signatures and cross-shape calls through the gateway.

Same-shape calls keep the provider's own tool ids and signatures byte for byte; cross-shape calls
(an Anthropic client on an OpenAI-wire model and the reverse) get ids valid in the client's shape
that map back to the upstream's on the next turn. The SDKs' parsers accept every answer and stream.
"""

from __future__ import annotations

import base64
import json

import anthropic
import openai
from cli.replay_server import ANTHROPIC, OPENAI, Reply

from .gateway_harness import GatewayHarness

WEATHER_TOOL = {"name": "get_weather", "description": "Weather in a city",
                "input_schema": {"type": "object", "properties": {"location": {"type": "string"},
                                                                  "units": {"type": "string"}}}}
OPENAI_TOOLS = [{"type": "function", "function": {"name": n, "description": n, "parameters": {
    "type": "object", "properties": {}}}} for n in ("GetWeatherArgs", "get_stock_price")]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32).decode()


def a_client(gateway: GatewayHarness) -> anthropic.Anthropic:
    _, token = gateway.issue()
    return anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)


def o_client(gateway: GatewayHarness) -> openai.OpenAI:
    _, token = gateway.issue()
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)


def test_anthropic_tool_round_trip_keeps_the_providers_ids(gateway: GatewayHarness) -> None:
    client = a_client(gateway)
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "response__tool_use.json"),
                            Reply.recording("anthropic", "response__text_after_tool_result.json"))
    first = client.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=200, tools=[WEATHER_TOOL],
                                   messages=[{"role": "user", "content": "weather in SF?"}])
    use = first.content[0]
    assert use.type == "tool_use" and use.id == "toolu_013DU6hV4C1M8dJ32ybQFAFi"
    assert use.input == {"location": "SF", "units": "c"} and first.stop_reason == "tool_use"
    second = client.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=200, tools=[WEATHER_TOOL],
                                    messages=[
                                        {"role": "user", "content": "weather in SF?"},
                                        {"role": "assistant", "content": [use.model_dump(exclude_none=True)]},
                                        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                                                      "content": "73F"}]},
                                    ])  # fmt: skip
    assert "73°F" in second.content[0].text
    sent = gateway.upstream.bodies(ANTHROPIC)[1]["messages"]
    assert sent[1]["content"][0]["id"] == use.id
    assert sent[2]["content"][0]["tool_use_id"] == use.id


def test_anthropic_streamed_tool_input_is_assembled_by_the_sdk(gateway: GatewayHarness) -> None:
    client = a_client(gateway)
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "stream__tool_use_input_json_delta.sse"))
    with client.messages.stream(model="anthropic:claude-sonnet-4-0", max_tokens=200, tools=[WEATHER_TOOL],
                                messages=[{"role": "user", "content": "weather?"}]) as stream:
        final = stream.get_final_message()
    uses = [b for b in final.content if b.type == "tool_use"]
    assert len(uses) == 1 and isinstance(uses[0].input, dict) and uses[0].input
    assert final.stop_reason == "tool_use"


def test_openai_parallel_tool_calls_non_streaming(gateway: GatewayHarness) -> None:
    client = o_client(gateway)
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__parallel_tool_calls.json"))
    answer = client.chat.completions.create(model="openai:gpt-4o", tools=OPENAI_TOOLS,  # type: ignore[arg-type]
                                            messages=[{"role": "user", "content": "weather and AAPL"}])
    calls = answer.choices[0].message.tool_calls or []
    assert [c.id for c in calls] == ["call_fdNz3vOBKYgOIpMdWotB9MjY", "call_h1DWI1POMJLb0KwIyQHWXD4p"]
    assert json.loads(calls[0].function.arguments) == {"city": "Edinburgh", "country": "GB", "units": "c"}  # type: ignore[union-attr]
    assert answer.choices[0].finish_reason == "tool_calls"


def test_openai_parallel_tool_calls_streamed_are_assembled_by_the_sdk(gateway: GatewayHarness) -> None:
    client = o_client(gateway)
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "stream__parallel_tool_calls_with_usage.sse"))
    with client.chat.completions.stream(model="openai:gpt-4o", tools=OPENAI_TOOLS,  # type: ignore[arg-type]
                                        messages=[{"role": "user", "content": "two things"}]) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert len(calls) == 2
    assert all(isinstance(json.loads(c.function.arguments), dict) for c in calls)  # type: ignore[union-attr]
    assert len({c.id for c in calls}) == 2


def test_openai_image_reaches_the_upstream(gateway: GatewayHarness) -> None:
    client = o_client(gateway)
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__image_input.json"))
    answer = client.chat.completions.create(model="openai:gpt-4o", messages=[{"role": "user", "content": [
        {"type": "text", "text": "what is in this image?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]}])  # fmt: skip
    assert "boardwalk" in (answer.choices[0].message.content or "")
    part = gateway.upstream.bodies(OPENAI)[0]["messages"][0]["content"][1]
    assert part["image_url"]["url"] == f"data:image/png;base64,{PNG}"


def test_anthropic_client_on_an_openai_model_with_an_image_and_tools(gateway: GatewayHarness) -> None:
    client = a_client(gateway)
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__parallel_tool_calls.json"),
                            Reply.recording("openai_chat", "response__text_after_tool_result.json"))
    tools = [{"name": n, "description": n, "input_schema": {"type": "object", "properties": {}}}
             for n in ("GetWeatherArgs", "get_stock_price")]
    question = {"role": "user", "content": [
        {"type": "text", "text": "weather and AAPL"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
    ]}  # fmt: skip
    first = client.messages.create(model="openai:gpt-4o", max_tokens=300, tools=tools,  # type: ignore[arg-type]
                                   messages=[question])  # type: ignore[list-item]
    uses = [b for b in first.content if b.type == "tool_use"]
    assert [u.name for u in uses] == ["GetWeatherArgs", "get_stock_price"]
    assert all(u.id.startswith("toolu_") or u.id.startswith("call_") for u in uses)
    assert first.stop_reason == "tool_use"
    upstream_first = gateway.upstream.bodies(OPENAI)[0]["messages"][0]["content"]
    assert upstream_first[1]["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    results = [{"type": "tool_result", "tool_use_id": u.id, "content": "ok"} for u in uses]
    second = client.messages.create(model="openai:gpt-4o", max_tokens=300, tools=tools,  # type: ignore[arg-type]
                                    messages=[question, {"role": "assistant",  # type: ignore[list-item]
                                                         "content": [u.model_dump(exclude_none=True) for u in uses]},
                                              {"role": "user", "content": results}])
    assert second.content[0].type == "text"
    sent = gateway.upstream.bodies(OPENAI)[1]["messages"]
    call_ids = [c["id"] for c in sent[1]["tool_calls"]]
    assert [m["tool_call_id"] for m in sent[2:4]] == call_ids


def test_openai_client_on_an_anthropic_model_streams_tool_calls(gateway: GatewayHarness) -> None:
    client = o_client(gateway)
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "stream__tool_use_input_json_delta.sse"))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_TOOL["input_schema"]}}]
    with client.chat.completions.stream(model="anthropic:claude-sonnet-4-0", tools=tools,  # type: ignore[arg-type]
                                        messages=[{"role": "user", "content": "weather?"}]) as stream:
        final = stream.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert len(calls) == 1 and calls[0].id.startswith("call_")
    assert isinstance(json.loads(calls[0].function.arguments), dict)  # type: ignore[union-attr]
    assert final.choices[0].finish_reason == "tool_calls"
    assert gateway.upstream.bodies(ANTHROPIC)[0]["tools"][0]["name"] == "get_weather"


def test_thinking_signature_reaches_the_anthropic_client_and_replays(gateway: GatewayHarness) -> None:
    client = a_client(gateway)
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "stream__thinking_delta_signature_delta.sse"),
                            Reply.recording("anthropic", "response__text.json"))
    model = "anthropic:claude-sonnet-4-0"
    with client.messages.stream(model=model, max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024},
                                messages=[{"role": "user", "content": "think"}]) as stream:
        final = stream.get_final_message()
    thinking = [b for b in final.content if b.type == "thinking"]
    assert len(thinking) == 1 and thinking[0].signature.startswith("EvMCCkYICxgCKkCHP2cS")
    assert thinking[0].thinking
    client.messages.create(model=model, max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024},
                           messages=[{"role": "user", "content": "think"},
                                     {"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                                       for b in final.content]},  # type: ignore[misc]
                                     {"role": "user", "content": "and now?"}])
    replayed = gateway.upstream.bodies(ANTHROPIC)[1]["messages"][1]["content"][0]
    assert replayed["type"] == "thinking" and replayed["signature"] == thinking[0].signature


def test_openai_client_on_a_thinking_anthropic_model_gets_text_only(gateway: GatewayHarness) -> None:
    client = o_client(gateway)
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "response__thinking_with_signature.json"))
    answer = client.chat.completions.create(model="anthropic:claude-sonnet-4-5",
                                            messages=[{"role": "user", "content": "think"}])
    assert answer.choices[0].message.content
    assert answer.choices[0].message.tool_calls is None


def test_an_anthropic_client_gets_server_tool_blocks_and_citations_as_anthropic_sent_them(
        gateway: GatewayHarness) -> None:
    """Web search run by Anthropic: its server_tool_use / web_search_tool_result blocks and the text's
    citations reach an Anthropic client unchanged, and go back upstream unchanged on the next turn."""
    from fixture_files import read_bytes

    recorded = json.loads(read_bytes("anthropic", "response__hosted_web_search_citations.json"))["content"]
    client = a_client(gateway)
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "response__hosted_web_search_citations.json"),
                            Reply.recording("anthropic", "response__text.json"))
    search = [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}]
    asked = {"role": "user", "content": "What happened in the news today?"}
    answer = client.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=1000, tools=search,
                                    messages=[asked])  # type: ignore[list-item]
    assert answer.to_dict()["content"] == recorded
    assert any(block.type == "text" and block.citations for block in answer.content)
    client.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=1000, tools=search,  # type: ignore[list-item]
                           messages=[asked, {"role": "assistant", "content": answer.to_dict()["content"]},
                                     {"role": "user", "content": "And the weather?"}])
    assert gateway.upstream.bodies(ANTHROPIC)[1]["messages"][1]["content"] == recorded
