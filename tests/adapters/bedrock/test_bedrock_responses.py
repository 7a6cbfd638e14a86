"""Every recorded Converse and ConverseStream answer parses into the canonical Message it holds.

The streams are fed through the real event-stream decoder in uneven pieces; a stream and a
response with the same content build the same blocks.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from bedrock_recordings import body, model_of, names

from metis_core.adapters.base import RequestContext
from metis_core.adapters.bedrock.adapter import BedrockAdapter
from metis_core.adapters.bedrock.response import parse_response
from metis_core.messages import (
    Message,
    MessageComplete,
    MessageStatus,
    RedactedThinkingBlock,
    StreamError,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    WholeBlock,
)
from metis_core.models.pricing import default_price_table
from metis_core.transport.wire import WireResponse

ADAPTER = BedrockAdapter()
PRICES = default_price_table()


def parse(name: str) -> Message:
    return ADAPTER.from_wire_response(WireResponse(200, body(name), {}), RequestContext(model_of(name), prices=PRICES))


def stream_events(name: str, piece: int = 97) -> list[object]:
    raw = body(name)
    decoder = ADAPTER.chunk_decoder()
    translator = ADAPTER.stream_translator(RequestContext(model_of(name), prices=PRICES))
    events: list[object] = []
    for start in range(0, len(raw), piece):
        for chunk in decoder.feed(raw[start : start + piece]):
            events.extend(translator.feed(chunk))
    decoder.finish()
    events.extend(translator.finish())
    return events


@pytest.mark.parametrize("name", names("converse"))
def test_every_recorded_converse_response_parses_complete(name: str) -> None:
    message = parse(name)
    assert message.metadata.status is MessageStatus.COMPLETE
    assert message.metadata.provider == "bedrock"
    assert message.content and message.metadata.usage.output_tokens > 0


@pytest.mark.parametrize("name", names("stream"))
def test_every_recorded_converse_stream_parses_complete(name: str) -> None:
    events = stream_events(name)
    [complete] = [e for e in events if isinstance(e, MessageComplete)]
    assert events[-1] is complete and not any(isinstance(e, StreamError) for e in events)
    assert complete.message.metadata.status is MessageStatus.COMPLETE
    assert complete.message.metadata.usage.input_tokens > 0


def test_signed_reasoning_keeps_its_signature_bound_to_bedrock_converse_and_the_model() -> None:
    message = parse("converse_reasoning_signed")
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingBlock) and thinking.signature is not None
    assert thinking.signature.startswith("Eu4CCkgIBxAB")
    assert thinking.origin is not None
    assert (thinking.origin.provider, thinking.origin.api, thinking.origin.model) == (
        "bedrock", "converse", "us.anthropic.claude-sonnet-4-20250514-v1:0")
    assert isinstance(message.content[1], TextBlock) and message.content[1].text.startswith("Here are the basic")


def test_streamed_reasoning_signature_arrives_whole_at_the_block_stop() -> None:
    events = stream_events("stream_reasoning_signed", piece=13)
    [whole] = [e for e in events if isinstance(e, WholeBlock)]
    assert isinstance(whole.block, ThinkingBlock) and whole.block.signature
    message = events[-1].message  # type: ignore[attr-defined]
    assert message.content[0] == whole.block
    assert message.text() == "Hello! It's nice to meet you. How can I help you today?"


def test_redacted_reasoning_is_kept_opaque_in_response_and_stream() -> None:
    assert isinstance(parse("converse_reasoning_redacted").content[0], RedactedThinkingBlock)
    message = stream_events("stream_reasoning_redacted")[-1].message  # type: ignore[attr-defined]
    assert [b.type for b in message.content] == ["redacted_thinking", "redacted_thinking", "text"]


def test_tool_use_gets_a_canonical_id_and_the_bedrock_id_is_kept_in_the_map() -> None:
    context = RequestContext(model_of("converse_tool_use_with_reasoning"))
    message = parse_response(WireResponse(200, body("converse_tool_use_with_reasoning"), {}), context)
    [call] = [b for b in message.content if isinstance(b, ToolUseBlock)]
    assert call.id.startswith("tu_") and call.name == "get_user_country" and call.input == {}
    assert context.tool_ids.provider_id("bedrock", call.id) == "tooluse_W9DaUFg4Tj2cRPpndqxWSg"
    assert message.metadata.stop_reason == "tool_use"


def test_streamed_tool_call_arguments_are_assembled_from_the_json_fragments() -> None:
    events = stream_events("stream_tool_use_nova", piece=31)
    message = events[-1].message  # type: ignore[attr-defined]
    [call] = [b for b in message.content if isinstance(b, ToolUseBlock)]
    assert (call.name, call.input) == ("get_temperature", {"city": "Paris"})
    assert message.metadata.stop_reason == "tool_use"


def test_cache_reads_and_writes_are_counted_and_priced_with_decimal_prices() -> None:
    written, read = parse("converse_cache_write").metadata.usage, parse("converse_cache_read").metadata.usage
    assert (written.input_tokens, written.cache_creation_input_tokens, written.cached_input_tokens) == (2, 1322, 0)
    assert (read.input_tokens, read.cache_creation_input_tokens, read.cached_input_tokens) == (2, 0, 1322)
    # Sonnet 4.5 on Bedrock: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million tokens
    expected = (Decimal(2) * 3 + Decimal(1322) * Decimal("0.30") + read.output_tokens * 15) / 1_000_000
    assert read.cost_usd == expected
    write_cost = Decimal(2) * 3 + Decimal(1322) * Decimal("3.75") + written.output_tokens * 15
    assert written.cost_usd == write_cost / 1_000_000


def test_guardrail_trace_is_kept_on_the_record() -> None:
    raw = parse("converse_text_guardrail_trace").metadata.provider_raw or {}
    assert raw["trace"]["guardrail"]["actionReason"] == "No action."
    assert "refusal" not in raw


def test_an_application_inference_profile_arn_is_a_model_id() -> None:
    message = parse("converse_application_profile_arn")
    assert message.metadata.model.startswith("bedrock:arn:aws:bedrock:us-east-1:123456789012:application-")
    assert message.text() == "Hello"


def test_a_streamed_guardrail_intervention_is_a_refusal_with_its_trace() -> None:
    from stream_frames import event_message

    frames = b"".join([
        event_message("messageStart", b'{"role":"assistant"}'),
        event_message("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"Sorry, blocked."}}'),
        event_message("contentBlockStop", b'{"contentBlockIndex":0}'),
        event_message("messageStop", b'{"stopReason":"guardrail_intervened"}'),
        event_message("metadata", b'{"usage":{"inputTokens":9,"outputTokens":3},'
                                  b'"trace":{"guardrail":{"outputAssessments":{"g1":[{"topicPolicy":{}}]}}}}'),
    ])
    decoder = ADAPTER.chunk_decoder()
    translator = ADAPTER.stream_translator(RequestContext("bedrock:amazon.nova-micro-v1:0"))
    events = [e for chunk in decoder.feed(frames) for e in translator.feed(chunk)] + translator.finish()
    message = events[-1].message  # type: ignore[attr-defined]
    assert message.metadata.stop_reason == "refusal"
    assert (message.metadata.provider_raw or {})["refusal"] == "guardrail_intervened"
    assert "outputAssessments" in (message.metadata.provider_raw or {})["trace"]["guardrail"]
