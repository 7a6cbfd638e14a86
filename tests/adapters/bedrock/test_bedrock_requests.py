"""Canonical -> Converse requests: a same-API round trip keeps every item; a swap drops what the target
cannot take through the logged projection; model ids, cache points, tools and thinking map as documented."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from bedrock_recordings import body, index, model_of, names

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.bedrock.adapter import BedrockAdapter
from metis_core.messages import (
    ImageBlock,
    ImageSource,
    Message,
    MessageComplete,
    Role,
    TextBlock,
    ToolDefinition,
    tool_result_message,
    user_message,
)
from metis_core.transport.wire import WireResponse

ADAPTER = BedrockAdapter()


def answer(name: str, tool_ids: ToolIdMap) -> Message:
    return ADAPTER.from_wire_response(WireResponse(200, body(name), {}),
                                      RequestContext(model_of(name), tool_ids=tool_ids))


def streamed(name: str, tool_ids: ToolIdMap) -> Message:
    decoder, translator = ADAPTER.chunk_decoder(), ADAPTER.stream_translator(RequestContext(model_of(name),
                                                                                          tool_ids=tool_ids))
    events = [e for chunk in decoder.feed(body(name)) for e in translator.feed(chunk)] + translator.finish()
    complete = events[-1]
    assert isinstance(complete, MessageComplete)
    return complete.message


def resend(message: Message, model: str, tool_ids: ToolIdMap, **options: Any) -> dict[str, Any]:
    request = ADAPTER.to_wire([user_message("hi"), message], [], AdapterOptions(model=model, **options), tool_ids)
    return request.body


@pytest.mark.parametrize("name", names("converse"))
def test_same_api_round_trip_keeps_every_content_item(name: str) -> None:
    ids = ToolIdMap()
    sent = resend(answer(name, ids), model_of(name), ids)
    assert sent["messages"][1] == json.loads(body(name))["output"]["message"]


@pytest.mark.parametrize("name", ["stream_reasoning_signed", "stream_reasoning_redacted", "stream_tool_use_nova"])
def test_a_streamed_answer_goes_back_with_its_signature_redacted_blocks_and_tool_id(name: str) -> None:
    ids = ToolIdMap()
    content = resend(streamed(name, ids), model_of(name), ids)["messages"][1]["content"]
    kinds = [next(iter(block)) for block in content]
    if name == "stream_reasoning_signed":
        assert kinds == ["reasoningContent", "text"]
        assert content[0]["reasoningContent"]["reasoningText"]["signature"].startswith("Eu0CCkgIBxAB")
    elif name == "stream_reasoning_redacted":
        assert kinds == ["reasoningContent", "reasoningContent", "text"]
    else:
        assert content[1]["toolUse"]["toolUseId"].startswith("tooluse_lAG_zP8QRHmSYOwZzza")


def test_the_recorded_follow_up_request_is_rebuilt_from_the_canonical_history() -> None:
    """pydantic-ai's second request of the tool-use recording, rebuilt: call and result carry Bedrock's id."""
    ids = ToolIdMap()
    call = answer("converse_tool_use_with_reasoning", ids)
    tool_use = next(b for b in call.content if b.type == "tool_use")
    history = [user_message("What is the largest city in the user country?"), call,
               tool_result_message(tool_use.id, "Mexico")]  # type: ignore[union-attr]
    sent = ADAPTER.to_wire(history, [], AdapterOptions(model=model_of("converse_tool_use_with_reasoning")), ids).body
    recorded = index()["converse_tool_result_answer"]["request_body"]
    assert sent["messages"][1] == recorded["messages"][1]
    assert sent["messages"][2]["content"][0]["toolResult"]["toolUseId"] == \
        recorded["messages"][2]["content"][0]["toolResult"]["toolUseId"]


def test_swap_to_an_anthropic_alias_drops_bedrock_signatures_through_the_logged_projection() -> None:
    """`claude-3-7-sonnet-latest` is not matched to a dated Bedrock id: the signature is dropped and logged."""
    ids = ToolIdMap()
    call = answer("converse_tool_use_with_reasoning", ids)
    request = AnthropicAdapter().to_wire([user_message("hi"), call], [],
                                         AdapterOptions(model="anthropic:claude-3-7-sonnet-latest"), ids)
    content = request.body["messages"][1]["content"]
    assert [b["type"] for b in content] == ["text", "tool_use"]
    assert content[1]["id"].startswith("toolu_")  # Bedrock's id is not Anthropic's: a fresh one, mapped
    [dropped] = request.dropped
    assert dropped.block_type == "thinking" and "bedrock/converse" in dropped.reason


def test_swap_between_two_bedrock_models_drops_the_other_models_signature() -> None:
    ids = ToolIdMap()
    sent = ADAPTER.to_wire([user_message("hi"), answer("converse_reasoning_signed", ids)], [],
                           AdapterOptions(model="bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"), ids)
    assert [next(iter(b)) for b in sent.body["messages"][1]["content"]] == ["text"]
    assert [d.block_type for d in sent.dropped] == ["thinking"]


def test_model_ids_and_arns_are_percent_encoded_into_one_path_segment() -> None:
    for name in ("converse_application_profile_arn", "converse_reasoning_signed", "stream_text_nova"):
        request = ADAPTER.to_wire([user_message("hi")], [], AdapterOptions(model=model_of(name),
                                                                            stream=name.startswith("stream")))
        assert "https://bedrock-runtime.us-east-1.amazonaws.com" + request.path == index()[name]["request_uri"]


def test_cache_breakpoints_become_cache_points_after_the_marked_message_and_system() -> None:
    system = Message(role=Role.SYSTEM, content=[TextBlock(text="long instructions")],
                     metadata={"provider_raw": {"bedrock": {"cache_point": True}}})
    marked = Message(role=Role.USER, content=[TextBlock(text="a long document")],
                     metadata={"provider_raw": {"anthropic": {"cache_control": {"type": "ephemeral"}}}})
    sent = ADAPTER.to_wire([system, marked], [], AdapterOptions(model="bedrock:amazon.nova-micro-v1:0")).body
    assert sent["system"] == [{"text": "long instructions"}, {"cachePoint": {"type": "default"}}]
    assert sent["messages"][0]["content"] == [{"text": "a long document"}, {"cachePoint": {"type": "default"}}]


def test_tools_choice_thinking_and_inference_settings_map_to_converse_fields() -> None:
    tool = ToolDefinition(name="get_temperature", description="Temperature of a city",
                          input_schema={"type": "object", "properties": {"city": {"type": "string"}}})
    sent = ADAPTER.to_wire([user_message("hi")], [tool], AdapterOptions(
        model="bedrock:global.anthropic.claude-sonnet-4-5-20250929-v1:0", tool_choice="required", temperature=0.2,
        stop=["END"], thinking_budget_tokens=2048, extra={"guardrailConfig": {"guardrailIdentifier": "g1",
                                                                             "guardrailVersion": "1"}})).body
    assert sent["toolConfig"] == {"tools": [{"toolSpec": {"name": "get_temperature",
                                                          "description": "Temperature of a city",
                                                          "inputSchema": {"json": tool.input_schema}}}],
                                  "toolChoice": {"any": {}}}
    assert sent["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    assert sent["inferenceConfig"] == {"maxTokens": 16384, "temperature": 0.2, "stopSequences": ["END"]}
    assert sent["guardrailConfig"]["guardrailIdentifier"] == "g1"
    nova = ADAPTER.to_wire([user_message("hi")], [], AdapterOptions(model="bedrock:amazon.nova-pro-v1:0",
                                                                     reasoning_effort="high")).body
    assert "additionalModelRequestFields" not in nova  # Anthropic's thinking field goes to Claude only


def test_images_go_as_bytes_and_a_url_image_is_dropped_through_the_log() -> None:
    png = ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgo="), media_type="image/png")
    linked = ImageBlock(source=ImageSource(kind="url", data="https://example.com/a.png"), media_type="image/png")
    message = Message(role=Role.USER, content=[TextBlock(text="what is this?"), png, linked])
    request = ADAPTER.to_wire([message], [], AdapterOptions(model="bedrock:amazon.nova-lite-v1:0"))
    assert request.body["messages"][0]["content"][1] == {"image": {"format": "png",
                                                                   "source": {"bytes": "iVBORw0KGgo="}}}
    assert len(request.body["messages"][0]["content"]) == 2
    assert [d.block_type for d in request.dropped] == ["image"]


@pytest.mark.parametrize("name", ["converse_citations_document", "converse_citations_pdf_page"])
def test_recorded_citations_are_read_and_replayed_to_converse_as_they_came(name: str) -> None:
    ids = ToolIdMap()
    message = answer(name, ids)
    cited = [b for b in message.content if isinstance(b, TextBlock) and b.citations]
    recorded = [b["citationsContent"] for b in json.loads(body(name))["output"]["message"]["content"]
                if "citationsContent" in b]
    assert [(c.citations[0].title, c.citations[0].cited_text) for c in cited] == [  # type: ignore[index]
        (r["citations"][0]["title"], r["citations"][0]["sourceContent"][0]["text"]) for r in recorded] != []
    assert [c.citations[0].payload["location"] for c in cited] == [  # type: ignore[index]
        r["citations"][0]["location"] for r in recorded]  # documentChar / documentPage kept as sent
    to_anthropic = AnthropicAdapter().to_wire([user_message("hi"), message], [],
                                              AdapterOptions(model="anthropic:claude-sonnet-4-5"), ids)
    assert all(set(b) == {"type", "text"} for b in to_anthropic.body["messages"][1]["content"])
    assert {d.block_type for d in to_anthropic.dropped} == {"citations"}


@pytest.mark.parametrize(("stream", "follow_up"), [("stream_citations_document", "converse_citations_document"),
                                                  ("stream_reasoning_claude_sonnet_5",
                                                   "converse_reasoning_after_streamed_turn")])
def test_a_streamed_answer_is_rebuilt_as_the_recorded_follow_up_request_sent_it(stream: str, follow_up: str) -> None:
    """langchain-aws's second request replays the streamed answer (cited text; signed reasoning):
    metis rebuilds that assistant turn exactly from the canonical message."""
    ids = ToolIdMap()
    sent = resend(streamed(stream, ids), model_of(stream), ids)
    assert sent["messages"][1] == index()[follow_up]["request_body"]["messages"][1]


def test_a_guardrail_intervention_is_a_named_refusal_on_the_record() -> None:
    blocked = {"output": {"message": {"role": "assistant", "content": [{"text": "Sorry, I can't help with that."}]}},
               "stopReason": "guardrail_intervened", "usage": {"inputTokens": 12, "outputTokens": 0},
               "trace": {"guardrail": {"inputAssessment": {"g1": {"topicPolicy": {"topics": [
                   {"name": "Finance", "type": "DENY", "action": "BLOCKED"}]}}}}}}
    message = ADAPTER.from_wire_response(WireResponse(200, orjson.dumps(blocked), {}),
                                         RequestContext("bedrock:amazon.nova-micro-v1:0"))
    assert message.metadata.stop_reason == "refusal"
    raw = message.metadata.provider_raw or {}
    assert raw["refusal"] == "guardrail_intervened" and raw["stop_reason"] == "guardrail_intervened"
    assert raw["trace"]["guardrail"]["inputAssessment"]["g1"]["topicPolicy"]["topics"][0]["action"] == "BLOCKED"
