"""Every OpenRouter response and stream sample through ModelClient -> MockTransport -> the adapter.

Covers what OpenRouter adds to OpenAI chat: leading whitespace before the body, `: OPENROUTER
PROCESSING` comments, reasoning / reasoning_details as origin-stamped thinking blocks with the
detail list kept verbatim, errors inside an HTTP-200 stream, and reported cost kept out of Usage.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from fixture_files import read_bytes, read_json, wire_files
from openai_chat_testkit import chat_client, final_message, json_response, sse_response

from metis_core.adapters.base import RequestContext
from metis_core.adapters.openrouter.adapter import OpenRouterAdapter
from metis_core.adapters.openrouter.reasoning import blocks_from_details
from metis_core.errors import NetworkError, ProviderError, RateLimitError, ServerError
from metis_core.messages import (
    BlockOrigin,
    Message,
    MessageStatus,
    RedactedThinkingBlock,
    StreamError,
    ThinkingBlock,
    ThinkingDelta,
    user_message,
)
from metis_core.transport.framing import WireChunk, decode_all

MODEL = "openrouter:anthropic/claude-sonnet-4.5"
ORIGIN = BlockOrigin(provider="openrouter", api="chat_completions", model="anthropic/claude-sonnet-4.5")

# name -> (blocks, text starts with, signature prefix, input, output, reasoning tokens, reported cost)
EXPECTED: dict[str, tuple[list[str], str, str | None, int, int, int, Any]] = {
    "response__no_reasoning_leading_whitespace.json": (["text"], "The capital of France is Paris.", None, 14, 7, 0, 0),
    "response__reasoning_details_anthropic_signature.json": (
        ["thinking", "text"],
        "ok",
        "EugCCkgIDRAB",
        43,
        53,
        48,
        0.000924,
    ),
    "response__reasoning_details_claude_thinking_variant.json": (
        ["thinking", "text"],
        "I am Claude",
        "ErcBCkgICBAC",
        43,
        402,
        0,
        None,
    ),
    "response__reasoning_details_encrypted_summary_openai.json": (
        ["thinking", "redacted_thinking", "text"],
        "Short answer: Very large.",
        None,
        41,
        1457,
        704,
        None,
    ),
    "response__reasoning_details_leading_whitespace.json": (
        ["thinking", "text"],
        "The capital of France is **Paris**.",
        None,
        74,
        21,
        2,
        5.37e-06,
    ),
    "response__reasoning_details_signature_anthropic_byok.json": (
        ["thinking", "text"],
        "The capital of France is **Paris**.",
        "CAIS6AIKhwEI",
        14,
        164,
        46,
        0,
    ),
    "response__tool_calls.json": (["tool_use"], "", None, 134, 43, 0, None),
    "response__usage_details.json": (
        ["thinking", "redacted_thinking", "text"],
        "Here’s a concise",
        None,
        17,
        2177,
        960,
        0.00435825,
    ),
    "docs_example__response_reasoning_details.json": (
        ["thinking", "thinking", "text"],
        "Based on my analysis",
        None,
        0,
        0,
        0,
        None,
    ),
}


def fetch(name: str) -> Message:
    client, server = chat_client("openrouter", json_response(read_bytes("openrouter", name)))
    message = client.complete([user_message("hi")], MODEL)
    assert server.requests[0].url.path == "/chat/completions"
    return message


def test_every_response_sample_has_expectations() -> None:
    names = [p.name for p in wire_files("openrouter", "response")] + ["docs_example__response_reasoning_details.json"]
    assert sorted(names) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_response_parses_with_reasoning_and_usage(name: str) -> None:
    blocks, text, signature, input_tokens, output_tokens, reasoning, cost = EXPECTED[name]
    message = fetch(name)
    assert message.status is MessageStatus.COMPLETE
    assert [b.type for b in message.content] == blocks
    assert message.text().startswith(text)
    thinking = [b for b in message.content if isinstance(b, ThinkingBlock | RedactedThinkingBlock)]
    assert all(b.origin == ORIGIN for b in thinking)
    if signature is not None:
        assert isinstance(thinking[0], ThinkingBlock) and (thinking[0].signature or "").startswith(signature)
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (input_tokens, output_tokens, reasoning)
    assert usage.cost_usd is None  # never parroted: no price table was given
    raw = message.metadata.provider_raw or {}
    assert raw.get("openrouter_usage", {}).get("cost") == cost
    body = orjson.loads(read_bytes("openrouter", name))
    details = body["choices"][0]["message"].get("reasoning_details")
    assert raw.get("reasoning_details") == (details or None)  # verbatim list, or nothing


def test_leading_whitespace_padding_is_tolerated() -> None:
    body = read_bytes("openrouter", "response__reasoning_details_signature_anthropic_byok.json")
    assert body[:1] in (b"\n", b" ")
    assert fetch("response__reasoning_details_signature_anthropic_byok.json").metadata.stop_reason == "end_turn"


def test_short_mistral_tool_ids_and_spaced_arguments() -> None:
    message = fetch("response__tool_calls.json")
    call = message.tool_uses()[0]
    assert (call.name, call.input) == ("divide", {"numerator": 123, "denominator": 456, "on_inf": "infinity"})
    assert message.metadata.stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("name", "kind", "text"),
    [
        ("docs_example__reasoning_detail_text.json", "thinking", "Let me think through this step by step"),
        ("docs_example__reasoning_detail_summary.json", "thinking", "The model analyzed the problem"),
        (
            "docs_example__reasoning_detail_encrypted.json",
            "redacted_thinking",
            "eyJlbmNyeXB0ZWQiOiJ0cnVlIiwiY29udGVudCI6IltSRURBQ1RFRF0ifQ==",
        ),
    ],
)
def test_each_reasoning_detail_type_becomes_a_block(name: str, kind: str, text: str) -> None:
    detail = read_json("openrouter", name)
    [block] = blocks_from_details([detail], ORIGIN)
    assert block.type == kind and block.origin == ORIGIN
    value = block.data if isinstance(block, RedactedThinkingBlock) else block.text
    assert value.startswith(text)
    if name.endswith("_text.json"):
        assert isinstance(block, ThinkingBlock) and block.signature == "sha256:abc123def456..."


# --- streams --------------------------------------------------------------------------------


def stream(name: str) -> list[Any]:
    client, _ = chat_client("openrouter", sse_response(read_bytes("openrouter", name)))
    return list(client.stream([user_message("hi")], MODEL))


def test_every_stream_sample_is_covered() -> None:
    covered = {
        "stream__reasoning_details_deltas.sse",
        "stream__midstream_error_chunk.sse",
        "docs_example__stream_comment_processing.sse",
        "docs_example__stream_midstream_error_chunk.sse",
        "docs_example__stream_midstream_error_server_error.sse",
    }
    assert {p.name for p in wire_files("openrouter") if p.name.endswith(".sse")} == covered


def test_reasoning_stream_with_processing_comments_builds_signed_thinking() -> None:
    events = stream("stream__reasoning_details_deltas.sse")
    message = final_message(events)
    assert message.status is MessageStatus.COMPLETE and message.text() == "2 + 2 = 4"
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingBlock) and thinking.origin == ORIGIN
    assert thinking.text == "This is a simple arithmetic question. 2+2 equals 4."
    assert (thinking.signature or "").startswith("Et0BCkgIChACGAIqQA2s7h7tA7IG")
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == thinking.text
    [detail] = (message.metadata.provider_raw or {})["reasoning_details"]
    assert detail == {
        "type": "reasoning.text",
        "text": thinking.text,
        "signature": thinking.signature,
        "format": "anthropic-claude-v1",
        "index": 0,
    }
    assert message.metadata.usage is not None and message.metadata.usage.reasoning_tokens == 13


def test_error_inside_a_200_stream_ends_with_an_error_event_and_partial() -> None:
    events = stream("stream__midstream_error_chunk.sse")
    errors = [e for e in events if isinstance(e, StreamError)]
    assert len(errors) == 1
    assert errors[0].error_class == "invalid_request" and "Token limit reached" in errors[0].message
    message = final_message(events)
    assert message.status is MessageStatus.PARTIAL
    assert isinstance(message.content[0], ThinkingBlock)
    assert message.content[0].text == "We need to respond to a greeting. The user"
    assert message.metadata.usage is not None and message.metadata.usage.input_tokens == 43


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("docs_example__stream_midstream_error_chunk.sse", RateLimitError),
        ("docs_example__stream_midstream_error_server_error.sse", ServerError),
        ("docs_example__stream_comment_processing.sse", NetworkError),
    ],
)
def test_stream_that_fails_before_any_content_is_raised_with_its_class(name: str, cls: type[ProviderError]) -> None:
    with pytest.raises(cls):
        stream(name)


def test_in_stream_error_classes_through_the_translator() -> None:
    for name, error_class in [
        ("docs_example__stream_midstream_error_chunk.sse", "rate_limit"),
        ("docs_example__stream_midstream_error_server_error.sse", "server_error"),
    ]:
        translator = OpenRouterAdapter().stream_translator(RequestContext(model=MODEL))
        events = [e for c in decode_all(read_bytes("openrouter", name), "sse") for e in translator.feed(c)]
        events += translator.finish()
        assert [e.error_class for e in events if isinstance(e, StreamError)] == [error_class]
        assert final_message(events).status is MessageStatus.ERROR


def test_docs_stream_chunk_with_reasoning_details() -> None:
    chunk = orjson.dumps(read_json("openrouter", "docs_example__stream_chunk_reasoning_details.json")).decode()
    translator = OpenRouterAdapter().stream_translator(RequestContext(model=MODEL))
    events = translator.feed(WireChunk(data=chunk)) + translator.finish()
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["Let me think about this step by step..."]
    assert final_message(events).status is MessageStatus.PARTIAL  # cut off: no finish_reason followed
