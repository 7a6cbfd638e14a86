"""Responses API bodies -> canonical messages: every recorded response, usage normalization, bad bodies."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from adapters.openai_responses.responses_oracle import PROVIDER
from fixture_files import plain_wire_files, read_bytes, read_json

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.adapters.openai_responses.usage import usage_from_responses
from metis_core.errors import (
    InvalidRequestError,
    MalformedResponseError,
    OtherProviderError,
    RateLimitError,
    RequestCancelledError,
    ServerError,
)
from metis_core.messages import BlockOrigin, Message, MessageStatus, TextBlock, ThinkingBlock, ToolUseBlock
from metis_core.transport.wire import WireResponse

ADAPTER = OpenAIResponsesAdapter()

# name -> (block types, first text prefix, (tool name, tool input) or None,
#          usage (input, output, cached, cache write, reasoning), stop reason)
EXPECTED: dict[str, tuple[list[str], str, tuple[str, dict[str, Any]] | None, tuple[int, ...], str]] = {
    "response__after_function_call_output.json": (
        ["text"],
        "The weather in San Francisco is currently sunny with a temperature of 72°F",
        None,
        (60, 36, 0, 0, 0),
        "end_turn",
    ),
    "response__cached_tokens.json": (["text"], "2, 3, 4", None, (125, 8, 1390, 0, 0), "end_turn"),
    "response__custom_tool_call_with_reasoning.json": (
        ["tool_use"],
        "",
        ("math_exp", {"input": "4 + 4"}),
        (159, 275, 0, 0, 256),
        "tool_use",
    ),
    "response__function_call.json": (
        ["tool_use"],
        "",
        ("get_current_weather", {"location": "Boston, MA", "unit": "celsius"}),
        (75, 23, 0, 0, 0),
        "tool_use",
    ),
    "response__function_call_agents_sdk.json": (
        ["tool_use"],
        "",
        ("add", {"a": 1, "b": 2}),
        (289, 18, 0, 0, 0),
        "tool_use",
    ),
    "response__reasoning_encrypted_content_summary.json": (
        ["thinking", "text"],
        "```python\ndef factorial(n: int) -> int:",
        None,
        (34, 226, 0, 0, 59),
        "end_turn",
    ),
    "response__reasoning_item_and_tokens.json": (
        ["text"],
        "The 2020 World Series was played entirely at Globe Life Field in Arlington, Texas",
        None,
        (54, 164, 0, 0, 128),
        "end_turn",
    ),
    "response__text.json": (["text"], "I can't provide real-time updates", None, (14, 50, 0, 0, 0), "end_turn"),
    "docs_example__response_function_call.json": (
        ["tool_use"],
        "",
        ("get_current_weather", {"location": "Boston, MA", "unit": "celsius"}),
        (291, 23, 0, 0, 0),
        "tool_use",
    ),
    "docs_example__response_reasoning_tokens.json": (
        ["text"],
        "The classic tongue twister...",
        None,
        (81, 1035, 0, 0, 832),
        "end_turn",
    ),
}


def context(model: str = "openai_responses:gpt-5", ids: ToolIdMap | None = None) -> RequestContext:
    return RequestContext(model=model, session_id="sess_p", tool_ids=ids if ids is not None else ToolIdMap())


def parse(body: bytes, ctx: RequestContext | None = None, status: int = 200) -> Message:
    return ADAPTER.from_wire_response(WireResponse(status, body, {"x-request-id": "req_abc"}), ctx or context())


def test_every_response_sample_has_an_expectation() -> None:
    names = {p.name for p in plain_wire_files(PROVIDER) if p.name.startswith(("response__", "docs_example__response"))}
    assert names == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_recorded_response_parses_into_its_real_content(name: str) -> None:
    types, text, tool, usage, stop = EXPECTED[name]
    ids = ToolIdMap()
    message = parse(read_bytes(PROVIDER, name), context(ids=ids))
    body = read_json(PROVIDER, name)
    assert message.status is MessageStatus.COMPLETE
    assert [b.type for b in message.content] == types
    assert message.text().startswith(text)
    if tool is not None:
        [use] = message.tool_uses()
        assert (use.name, use.input) == tool
        call = next(i for i in body["output"] if i["type"] in ("function_call", "custom_tool_call"))
        assert ids.lookup_canonical(PROVIDER, call["call_id"]) == use.id and use.id.startswith("tu_")
    got = message.metadata.usage
    assert got is not None
    assert (
        got.input_tokens,
        got.output_tokens,
        got.cached_input_tokens,
        got.cache_creation_input_tokens,
        got.reasoning_tokens,
    ) == usage
    assert got.total_input_tokens == body["usage"]["input_tokens"]  # normalized exactly once
    assert message.metadata.stop_reason == stop
    assert message.metadata.model == "openai_responses:gpt-5" and message.metadata.provider == PROVIDER
    raw = message.metadata.provider_raw[PROVIDER]  # type: ignore[index]
    assert raw["response_id"] == body["id"] and raw["served_model"] == body["model"]


def test_reasoning_becomes_a_signed_thinking_block_with_origin_and_its_rs_id_is_kept() -> None:
    name = "response__reasoning_encrypted_content_summary.json"
    body = read_json(PROVIDER, name)
    message = parse(read_bytes(PROVIDER, name), context("openai_responses:gpt-5.2"))
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.text == body["output"][0]["summary"][0]["text"]
    assert thinking.signature == body["output"][0]["encrypted_content"]
    assert thinking.origin == BlockOrigin(provider=PROVIDER, api="responses", model="gpt-5.2")
    raw = message.metadata.provider_raw[PROVIDER]  # type: ignore[index]
    assert raw["reasoning"] == [{"id": "rs_0b028a7a2aca8d68006942f4e0d380819398dfa502c33bce7b", "block": 0}]


def test_a_parsed_reasoning_turn_replays_to_the_same_model_verbatim() -> None:
    name = "response__reasoning_encrypted_content_summary.json"
    body = read_json(PROVIDER, name)
    reply = parse(read_bytes(PROVIDER, name), context("openai_responses:gpt-5.2"))
    from metis_core.messages import user_message

    wire = ADAPTER.to_wire(
        [user_message("factorial?"), reply, user_message("thanks")],
        [],
        AdapterOptions(model="openai_responses:gpt-5.2"),
    ).body
    assert wire["input"][1] == {
        "type": "reasoning",
        "summary": body["output"][0]["summary"],
        "encrypted_content": body["output"][0]["encrypted_content"],
    }
    assert wire["input"][2] == {"role": "assistant", "content": body["output"][1]["content"][0]["text"]}


def test_reasoning_item_without_summary_or_encrypted_content_leaves_no_block_but_keeps_its_id() -> None:
    message = parse(read_bytes(PROVIDER, "response__custom_tool_call_with_reasoning.json"))
    assert message.thinking() == []
    raw = message.metadata.provider_raw[PROVIDER]  # type: ignore[index]
    assert raw["reasoning"] == [{"id": "rs_68a72e37d50481968742ebc1aeb9244c075c9fca6967ac8b"}]
    assert raw["custom_tool_calls"] == [message.tool_uses()[0].id]


def test_cache_write_tokens_are_taken_out_of_input_tokens_too() -> None:
    usage = usage_from_responses(
        {
            "input_tokens": 100,
            "output_tokens": 7,
            "input_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 20},
            "output_tokens_details": {"reasoning_tokens": 5},
        }
    )
    assert (usage.input_tokens, usage.cached_input_tokens, usage.cache_creation_input_tokens) == (50, 30, 20)
    assert (usage.output_tokens, usage.reasoning_tokens) == (7, 5)
    assert usage_from_responses(None).input_tokens == 0


# --- endings ------------------------------------------------------------------------------------


def body_with(**changes: Any) -> bytes:
    body = read_json(PROVIDER, "response__text.json")
    body.update(changes)
    return orjson.dumps(body)


def test_incomplete_at_max_output_tokens_is_a_complete_message_stopped_at_max_tokens() -> None:
    message = parse(body_with(status="incomplete", incomplete_details={"reason": "max_output_tokens"}))
    assert message.status is MessageStatus.COMPLETE and message.metadata.stop_reason == "max_tokens"
    assert message.metadata.provider_raw[PROVIDER]["incomplete_reason"] == "max_output_tokens"  # type: ignore[index]


def test_incomplete_for_content_filter_and_refusal_parts_stop_as_refusal() -> None:
    filtered = parse(body_with(status="incomplete", incomplete_details={"reason": "content_filter"}))
    assert filtered.metadata.stop_reason == "refusal"
    refused = parse(
        body_with(
            output=[
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "refusal", "refusal": "I can't help with that."}],
                }
            ]
        )
    )
    assert refused.metadata.stop_reason == "refusal" and refused.text() == "I can't help with that."


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"code": "server_error", "message": "The model failed."}, ServerError),
        ({"code": "rate_limit_exceeded", "message": "Slow down."}, RateLimitError),
        ({"code": "invalid_prompt", "message": "Prompt flagged."}, InvalidRequestError),
    ],
)
def test_a_failed_response_raises_the_class_its_error_code_names(error: dict[str, str], expected: type) -> None:
    with pytest.raises(expected) as caught:
        parse(body_with(status="failed", error=error, output=[]))
    assert caught.value.provider_code == error["code"] and error["message"] in str(caught.value)
    assert caught.value.request_id == "req_abc"


def test_cancelled_and_background_responses_are_not_taken_for_answers() -> None:
    with pytest.raises(RequestCancelledError):
        parse(body_with(status="cancelled"))
    with pytest.raises(OtherProviderError, match="background"):
        parse(body_with(status="queued", output=[]))


def test_tool_arguments_that_are_not_json_give_a_partial_message_without_the_call() -> None:
    body = read_json(PROVIDER, "response__function_call.json")
    body["output"][0]["arguments"] = '{"location": "Bos'
    message = parse(orjson.dumps(body))
    assert message.status is MessageStatus.PARTIAL and message.tool_uses() == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>Bad gateway</html>", "not JSON"),
        (b'{"id": "resp_1", "status": "completed"}', "output"),
        (b'{"output": ["oops"], "status": "completed"}', r"output\[0\]"),
        (b'{"output": [{"type": "function_call", "call_id": "c"}], "status": "completed"}', "no name"),
    ],
)
def test_malformed_bodies_raise_malformed_response_naming_the_problem(body: bytes, problem: str) -> None:
    with pytest.raises(MalformedResponseError, match=problem):
        parse(body)


def test_unknown_output_items_are_recorded_not_invented() -> None:
    message = parse(
        body_with(
            output=[
                {"type": "hologram_call_2031", "id": "hc_1", "status": "completed"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it."}]},
            ]
        )
    )
    assert message.content == [TextBlock(text="Found it.")]
    assert message.metadata.provider_raw[PROVIDER]["unhandled_items"] == ["hologram_call_2031"]  # type: ignore[index]


def test_exact_argument_strings_are_kept_so_replays_are_byte_identical() -> None:
    body = read_json(PROVIDER, "response__function_call.json")
    body["output"][0]["arguments"] = '{"location": "Boston, MA", "unit": "celsius"}'  # spaced, unlike orjson
    ids = ToolIdMap()
    reply = parse(orjson.dumps(body), context(ids=ids))
    use = reply.content[0]
    assert isinstance(use, ToolUseBlock)
    from metis_core.messages import tool_result_message, user_message

    wire = ADAPTER.to_wire(
        [user_message("weather"), reply, tool_result_message(use.id, "20C")],
        [],
        AdapterOptions(model="openai_responses:gpt-5"),
        ids,
    ).body
    assert wire["input"][1]["arguments"] == '{"location": "Boston, MA", "unit": "celsius"}'
    assert wire["input"][1]["call_id"] == "call_tjEzTywkXuBUO42ugPFnQYqi"


def test_reasoning_sent_as_reasoning_text_content_is_the_thinking_text_and_goes_back_as_content() -> None:
    """gpt-oss and Responses-compatible servers (DeepSeek's) send the reasoning itself as `content`
    `reasoning_text` parts with an empty summary; the recorded summary sample is reshaped that way."""
    from metis_core.messages import user_message

    body = read_json(PROVIDER, "response__reasoning_encrypted_content_summary.json")
    item = body["output"][0]
    parts = [{"type": "reasoning_text", "text": p["text"]} for p in item["summary"]]
    item["content"], item["summary"] = parts, []
    reply = parse(orjson.dumps(body), context("openai_responses:gpt-5.2"))
    [thinking] = [b for b in reply.content if isinstance(b, ThinkingBlock)]
    assert thinking.text == "\n\n".join(p["text"] for p in parts)
    wire = ADAPTER.to_wire([user_message("factorial?"), reply, user_message("thanks")], [],
                           AdapterOptions(model="openai_responses:gpt-5.2")).body
    assert wire["input"][1] == {"type": "reasoning", "summary": [], "content": parts,
                                "encrypted_content": item["encrypted_content"]}
