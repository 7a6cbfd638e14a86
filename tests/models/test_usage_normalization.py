"""Usage normalization: each provider's counts become canonical Usage once, checked on recorded traffic."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from fixture_files import read_bytes, read_json

from metis_core.models.usage_normalization import (
    normalize_anthropic_style,
    normalize_gemini_style,
    normalize_openai_style,
)


def anthropic_stream_usage(name: str) -> dict[str, Any]:
    """The usage an Anthropic stream reports: message_start's, with message_delta's output count."""
    usage: dict[str, Any] = {}
    for line in read_bytes("anthropic", name).decode().splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if event["type"] == "message_start":
            usage.update(event["message"]["usage"])
        elif event["type"] == "message_delta":
            usage.update(event["usage"])
    return usage


def test_openai_chat_prompt_tokens_include_cached_ones_and_are_split() -> None:
    raw = read_json("openai_chat", "response__cached_tokens_prompt_cache_read.json")["usage"]
    usage = normalize_openai_style(
        raw["prompt_tokens"],
        raw["completion_tokens"],
        cached_tokens=raw["prompt_tokens_details"]["cached_tokens"],
    )
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (68, 1152, 100)
    assert usage.total_input_tokens == raw["prompt_tokens"]


def test_openai_cache_write_tokens_are_taken_out_of_the_prompt_too() -> None:
    raw = read_json("openai_chat", "response__cache_write_and_reasoning_tokens.json")["usage"]
    details = raw["prompt_tokens_details"]
    usage = normalize_openai_style(
        raw["prompt_tokens"],
        raw["completion_tokens"],
        cached_tokens=details["cached_tokens"],
        cache_write_tokens=details["cache_write_tokens"],
        reasoning_tokens=raw["completion_tokens_details"]["reasoning_tokens"],
    )
    assert (usage.input_tokens, usage.cache_creation_input_tokens, usage.cached_input_tokens) == (3, 1217, 0)
    assert (usage.output_tokens, usage.reasoning_tokens) == (100, 100)
    assert usage.total_input_tokens == raw["prompt_tokens"]


def test_openai_responses_usage_normalizes_the_same_way() -> None:
    raw = read_json("openai_responses", "response__cached_tokens.json")["usage"]
    usage = normalize_openai_style(
        raw["input_tokens"],
        raw["output_tokens"],
        cached_tokens=raw["input_tokens_details"]["cached_tokens"],
        reasoning_tokens=raw["output_tokens_details"]["reasoning_tokens"],
    )
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (125, 1390, 8)


def test_anthropic_input_tokens_already_exclude_cache_reads() -> None:
    raw = anthropic_stream_usage("stream__cache_read_usage.sse")
    usage = normalize_anthropic_style(
        raw["input_tokens"],
        raw["output_tokens"],
        cache_read_input_tokens=raw["cache_read_input_tokens"],
        cache_creation_input_tokens=raw["cache_creation_input_tokens"],
    )
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (11, 1031, 100)
    assert usage.total_input_tokens == 11 + 1031


def test_the_same_cached_call_normalizes_to_the_same_usage_from_either_style() -> None:
    openai = normalize_openai_style(5000, 300, cached_tokens=4000, cache_write_tokens=200)
    anthropic = normalize_anthropic_style(800, 300, cache_read_input_tokens=4000, cache_creation_input_tokens=200)
    assert openai == anthropic


def test_gemini_thoughts_are_billed_as_output_and_cached_content_split_out() -> None:
    raw = read_json("gemini", "response__function_call_thought_signature.json")["usageMetadata"]
    usage = normalize_gemini_style(
        raw["promptTokenCount"],
        raw["candidatesTokenCount"],
        cached_content_token_count=raw.get("cachedContentTokenCount", 0),
        thoughts_token_count=raw["thoughtsTokenCount"],
    )
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (189, 112, 92)
    assert usage.total_input_tokens + usage.output_tokens == raw["totalTokenCount"]
    cached = normalize_gemini_style(1000, 10, cached_content_token_count=900)
    assert (cached.input_tokens, cached.cached_input_tokens) == (100, 900)


def test_more_cached_than_prompt_tokens_counts_zero_uncached_and_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="metis_core.models.usage"):
        usage = normalize_openai_style(100, 5, cached_tokens=150)
    assert (usage.input_tokens, usage.cached_input_tokens) == (0, 150)
    assert "150 cached" in caplog.text
