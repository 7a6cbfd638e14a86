"""Every recorded OpenAI chat response, through ModelClient -> MockTransport -> the adapter.

Asserts the real recorded values: text, tool names and inputs, normalized usage, stop reasons.
Also the malformed-body paths: not JSON, no choices, and an `error` object in an HTTP-200 body.
"""

from __future__ import annotations

from typing import Any

import pytest
from fixture_files import read_bytes, wire_files
from openai_chat_testkit import chat_client, json_response

from metis_core.adapters.base import RequestContext
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.errors import MalformedResponseError, RateLimitError
from metis_core.messages import Message, MessageStatus, ToolUseBlock, user_message
from metis_core.transport.wire import WireResponse

MODEL = "openai:gpt-4o"

# name -> (stop_reason, text starts with, [(tool, input)], input, output, cached, cache_write, reasoning)
EXPECTED: dict[str, tuple[str, str, list[tuple[str, dict[str, Any]]], int, int, int, int, int]] = {
    "response__after_system_message.json": ("end_turn", "Arrr matey", [], 29, 114, 0, 0, 0),
    "response__cache_write_and_reasoning_tokens.json": ("max_tokens", "", [], 3, 100, 0, 1217, 100),
    "response__cached_tokens_prompt_cache_read.json": ("max_tokens", "Structuring a database", [], 68, 100, 1152, 0, 0),
    "response__finish_reason_length.json": ("max_tokens", '{"', [], 79, 1, 0, 0, 0),
    "response__image_input.json": ("end_turn", "The image shows a scenic landscape", [], 1118, 55, 0, 0, 0),
    "response__n3_multiple_choices.json": ("end_turn", '{"city":"San Francisco","temperature":64', [], 79, 44, 0, 0, 0),
    "response__parallel_tool_calls.json": (
        "tool_use",
        "",
        [
            ("GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
            ("get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}),
        ],
        149,
        60,
        0,
        0,
        0,
    ),
    "response__reasoning_tokens_custom_tool_call.json": (
        "tool_use",
        "",
        [("math_exp", {"input": "4 + 4"})],
        241,
        214,
        0,
        0,
        192,
    ),
    "response__reasoning_tokens_o3_mini.json": ("end_turn", "The capital of France is ", [], 31, 467, 0, 0, 448),
    "response__refusal.json": ("refusal", "I'm very sorry, but I can't assist with that.", [], 79, 12, 0, 0, 0),
    "response__text.json": ("end_turn", "I'm unable to provide real-time weather updates.", [], 14, 37, 0, 0, 0),
    "response__text_after_tool_result.json": ("end_turn", "David Nguyen is a sophomore", [], 143, 36, 0, 0, 0),
    "response__tool_call_single.json": (
        "tool_use",
        "",
        [("GetWeatherArgs", {"city": "Edinburgh", "country": "UK", "units": "c"})],
        76,
        24,
        0,
        0,
        0,
    ),
    "response__tool_call_with_reasoning_tokens.json": ("tool_use", "", [("get_mixed_content", {})], 126, 85, 0, 0, 64),
    "response__web_search_annotations.json": ("end_turn", "Recent developments in artificial intelligence", [], 26,
                                              1044, 0, 0, 0),
    "docs_example__response_default_usage_details.json": (
        "end_turn",
        "Hello! How can I assist you today?",
        [],
        19,
        10,
        0,
        0,
        0,
    ),
    "docs_example__response_function_tool_call.json": (
        "tool_use",
        "",
        [("get_current_weather", {"location": "Boston, MA"})],
        82,
        17,
        0,
        0,
        0,
    ),
}


def response_samples() -> list[str]:
    names = [p.name for p in wire_files("openai_chat", "response")]
    names += [p.name for p in wire_files("openai_chat", "docs_example") if "__response" in p.name]
    return names


def test_every_response_sample_has_expectations() -> None:
    assert sorted(response_samples()) == sorted(EXPECTED)


def fetch(name: str) -> Message:
    client, server = chat_client("openai", json_response(read_bytes("openai_chat", name)))
    message = client.complete([user_message("hi")], MODEL, session_id="sess_resp")
    assert server.requests[0].url.path == "/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-SECRET-42"
    return message


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_response_parses_to_the_recorded_content(name: str) -> None:
    stop, text, tools, input_tokens, output_tokens, cached, cache_write, reasoning = EXPECTED[name]
    message = fetch(name)
    assert message.status is MessageStatus.COMPLETE
    assert message.metadata.stop_reason == stop
    assert message.text().startswith(text)
    assert [(u.name, u.input) for u in message.tool_uses()] == tools
    assert all(u.id.startswith("tu_") for u in message.tool_uses())
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (input_tokens, output_tokens)
    assert (usage.cached_input_tokens, usage.cache_creation_input_tokens) == (cached, cache_write)
    assert usage.reasoning_tokens == reasoning
    assert message.metadata.provider == "openai" and message.metadata.model == MODEL
    assert message.session_id == "sess_resp"


def test_n_greater_than_one_keeps_choice_zero_and_counts_the_others() -> None:
    message = fetch("response__n3_multiple_choices.json")
    assert message.text() == '{"city":"San Francisco","temperature":64,"units":"f"}'
    assert message.metadata.provider_raw is not None
    assert message.metadata.provider_raw["ignored_choices"] == 2


def test_tool_call_ids_map_back_to_the_provider_ids() -> None:
    adapter = OpenAIChatAdapter()
    context = RequestContext(model=MODEL)
    message = adapter.from_wire_response(
        WireResponse(200, read_bytes("openai_chat", "response__parallel_tool_calls.json")), context
    )
    ids = [context.tool_ids.provider_id("openai", u.id) for u in message.tool_uses()]
    assert ids == ["call_fdNz3vOBKYgOIpMdWotB9MjY", "call_h1DWI1POMJLb0KwIyQHWXD4p"]


def test_spaced_arguments_are_kept_verbatim_for_replay_to_openai() -> None:
    message = fetch("response__parallel_tool_calls.json")
    raw = message.metadata.provider_raw or {}
    first = message.tool_uses()[0]
    assert raw["tool_arguments"][first.id] == '{"city": "Edinburgh", "country": "GB", "units": "c"}'


def test_custom_grammar_tool_call_is_recorded_as_custom() -> None:
    message = fetch("response__reasoning_tokens_custom_tool_call.json")
    call = message.content[0]
    assert isinstance(call, ToolUseBlock)
    assert (message.metadata.provider_raw or {})["custom_tool_calls"] == [call.id]


def test_body_that_is_not_json_is_a_malformed_response_error() -> None:
    client, _ = chat_client("openai", json_response(b"<html>502 Bad Gateway</html>", headers={"x-request-id": "r1"}))
    with pytest.raises(MalformedResponseError, match="not JSON") as caught:
        client.complete([user_message("hi")], MODEL)
    assert caught.value.request_id == "r1"


def test_body_without_choices_is_malformed_and_names_the_problem() -> None:
    client, _ = chat_client("openai", json_response(b'{"id": "chatcmpl-1", "object": "chat.completion"}'))
    with pytest.raises(MalformedResponseError, match="has no choices"):
        client.complete([user_message("hi")], MODEL)


def test_choice_without_message_is_malformed() -> None:
    client, _ = chat_client("openai", json_response(b'{"choices": [{"index": 0, "finish_reason": "stop"}]}'))
    with pytest.raises(MalformedResponseError, match=r"choices\[0\]\.message"):
        client.complete([user_message("hi")], MODEL)


def test_usage_details_that_are_not_an_object_are_malformed() -> None:
    body = (b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],'
            b' "usage": {"prompt_tokens": 3, "completion_tokens": 2, "completion_tokens_details": "many"}}')
    client, _ = chat_client("openai", json_response(body))
    with pytest.raises(MalformedResponseError, match="unexpected shape"):
        client.complete([user_message("hi")], MODEL)


def test_error_object_in_a_200_body_raises_its_class() -> None:
    body = b'{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}'
    client, _ = chat_client("openai", json_response(body))
    with pytest.raises(RateLimitError):
        client.complete([user_message("hi")], MODEL)


def test_invalid_tool_argument_json_gives_a_partial_message() -> None:
    body = (
        b'{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":'
        b'[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\\"a\\": 1"}}]},'
        b'"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}'
    )
    message = OpenAIChatAdapter().from_wire_response(WireResponse(200, body), RequestContext(model=MODEL))
    assert message.status is MessageStatus.PARTIAL
    assert message.tool_uses() == []
    assert "invalid tool arguments" in (message.metadata.provider_raw or {})["incomplete"]


def test_a_search_answers_url_citations_become_citations_on_its_text() -> None:
    import json

    recorded = json.loads(read_bytes("openai_chat", "response__web_search_annotations.json"))["choices"][0]["message"]
    message = fetch("response__web_search_annotations.json")
    [block] = message.content
    assert block.citations is not None and [c.payload for c in block.citations] == recorded["annotations"]
    assert [(c.url, c.title) for c in block.citations] == [
        (a["url_citation"]["url"], a["url_citation"]["title"]) for a in recorded["annotations"]]
    assert all(c.origin is not None and c.origin.same_api("openai", "chat_completions") for c in block.citations)
    first = recorded["annotations"][0]["url_citation"]
    assert block.text[first["start_index"]:first["end_index"]].startswith("([forbes.com]")  # spans index the text



def test_a_cited_answer_goes_back_to_chat_as_its_text_and_the_drop_is_named(caplog: pytest.LogCaptureFixture) -> None:
    import json
    import logging

    cited = json_response(read_bytes("openai_chat", "response__web_search_annotations.json"))
    client, server = chat_client("openai", cited, json_response(read_bytes("openai_chat", "response__text.json")))
    answer = client.complete([user_message("news?")], MODEL, session_id="sess_resp")
    with caplog.at_level(logging.INFO):
        client.complete([user_message("news?"), answer, user_message("more?")], MODEL, session_id="sess_resp")
    sent = json.loads(server.requests[1].content)["messages"][1]
    assert sent["role"] == "assistant" and sent["content"] == answer.text() and "annotations" not in sent
    assert any("takes no annotations in a request" in r.getMessage() for r in caplog.records)
