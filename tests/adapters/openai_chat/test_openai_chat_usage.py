"""Chat usage normalization: input_tokens excludes cached and cache-write tokens, exactly once."""

from __future__ import annotations

from fixture_files import read_json

from metis_core.adapters.openai_chat.usage import usage_from_chat


def test_cached_tokens_are_taken_out_of_prompt_tokens() -> None:
    usage = usage_from_chat(read_json("openai_chat", "response__cached_tokens_prompt_cache_read.json")["usage"])
    assert (usage.input_tokens, usage.cached_input_tokens, usage.total_input_tokens) == (68, 1152, 1220)


def test_cache_write_tokens_are_taken_out_too_and_reasoning_is_reported() -> None:
    usage = usage_from_chat(read_json("openai_chat", "response__cache_write_and_reasoning_tokens.json")["usage"])
    assert (usage.input_tokens, usage.cache_creation_input_tokens, usage.cached_input_tokens) == (3, 1217, 0)
    assert (usage.output_tokens, usage.reasoning_tokens) == (100, 100)
    assert usage.total_input_tokens == 1220


def test_cached_and_cache_write_together() -> None:
    usage = usage_from_chat(
        {
            "prompt_tokens": 2000,
            "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 1200, "cache_write_tokens": 300},
            "completion_tokens_details": {"reasoning_tokens": 20},
        }
    )
    assert (usage.input_tokens, usage.cached_input_tokens, usage.cache_creation_input_tokens) == (500, 1200, 300)
    assert usage.reasoning_tokens == 20 and usage.cost_usd is None


def test_missing_null_and_classic_usage_shapes() -> None:
    assert usage_from_chat(None).input_tokens == 0
    classic = usage_from_chat({"prompt_tokens": 14, "completion_tokens": 37, "total_tokens": 51})
    assert (classic.input_tokens, classic.output_tokens, classic.cached_input_tokens) == (14, 37, 0)
    nulls = usage_from_chat({"prompt_tokens": 5, "prompt_tokens_details": None, "completion_tokens_details": None})
    assert nulls.input_tokens == 5


def test_deepseek_cache_hit_tokens_count_as_cached() -> None:
    usage = usage_from_chat({"prompt_tokens": 100, "completion_tokens": 3, "prompt_cache_hit_tokens": 64})
    assert (usage.input_tokens, usage.cached_input_tokens) == (36, 64)
