"""Usage counts of real held-out answers (tests/data/heldout, see PROVENANCE.md) that the totals alone
would lose: Anthropic thinking tokens and per-iteration usage (advisor and compaction calls, priced
beside the answer), Chat Completions per-modality counts, OpenRouter's web search count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from mock_http import serve, sse_response

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.usage import usage_from_wire
from metis_core.messages import ExtraCallUsage, Message, MessageComplete, Usage, user_message
from metis_core.models.pricing import default_price_table

HELDOUT = Path(__file__).resolve().parents[1] / "data" / "heldout"
MODELS = {"anthropic": "anthropic:claude-sonnet-4-5", "openai": "openai:gpt-4.1-mini",
          "openrouter": "openrouter:openai/gpt-4.1-mini"}


def answer(provider: str, folder: str, name: str) -> Message:
    data = (HELDOUT / folder / name).read_bytes()
    streamed = name.endswith(".sse")
    client, _ = serve(sse_response(data) if streamed else httpx.Response(200, content=data), provider=provider)
    if not streamed:
        return client.complete([user_message("go")], model=MODELS[provider], tool_ids=ToolIdMap())
    events = list(client.stream([user_message("go")], model=MODELS[provider], tool_ids=ToolIdMap()))
    assert isinstance(events[-1], MessageComplete)
    return events[-1].message


def streamed_usage(name: str) -> dict[str, Any]:
    """The last `usage` a recorded Anthropic stream reports (message_delta's cumulative figures)."""
    lines = (HELDOUT / "anthropic" / name).read_text().splitlines()
    payloads = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    return next(p["usage"] for p in reversed(payloads) if p.get("type") == "message_delta")


def test_anthropic_thinking_tokens_and_advisor_iterations_are_kept() -> None:
    body = json.loads((HELDOUT / "anthropic" / "response__test_anthropic_advisor_tool__0.json").read_text())
    message = answer("anthropic", "anthropic", "response__test_anthropic_advisor_tool__0.json")
    usage = message.metadata.usage
    assert usage is not None and usage.reasoning_tokens == body["usage"]["output_tokens_details"]["thinking_tokens"]
    raw = message.metadata.provider_raw or {}
    assert raw["usage_iterations"] == body["usage"]["iterations"]  # the advisor model's own call among them
    assert {i["type"] for i in raw["usage_iterations"]} == {"message", "advisor_message"}


def test_a_streamed_compaction_keeps_the_compaction_call_usage() -> None:
    name = "stream__test_anthropic_compaction_usage_with_cache_streaming__0.sse"
    message = answer("anthropic", "anthropic", name)
    iterations = (message.metadata.provider_raw or {})["usage_iterations"]
    assert iterations == streamed_usage(name)["iterations"]
    assert iterations[0]["type"] == "compaction" and iterations[0]["cache_read_input_tokens"] == 55096


def test_a_streamed_advisor_answer_keeps_its_thinking_tokens() -> None:
    name = "stream__test_anthropic_advisor_tool_stream__0.sse"
    usage = answer("anthropic", "anthropic", name).metadata.usage
    thinking = streamed_usage(name)["output_tokens_details"]["thinking_tokens"]
    assert usage is not None and usage.reasoning_tokens == thinking


def test_chat_completions_per_modality_counts_are_kept() -> None:
    usage = answer("openai", "openai_chat", "response__test_audio_as_binary_content_input__0.json").metadata.usage
    assert usage is not None and usage.details is not None
    assert usage.details.modalities == {"prompt": {"TEXT": 20, "AUDIO": 44}, "completion": {"TEXT": 9}}
    assert usage.details.audio_input_tokens == 44


def test_openrouter_web_searches_and_video_tokens_are_kept() -> None:
    searched = answer("openrouter", "openrouter", "response__test_openrouter_web_search_annotations__0.json")
    assert searched.metadata.usage is not None and searched.metadata.usage.details is not None
    assert searched.metadata.usage.details.web_search_requests == 1
    video = answer("openrouter", "openrouter", "response__test_openrouter_binary_content_video_public_api__0.json")
    assert video.metadata.usage is not None and video.metadata.usage.details is not None
    assert video.metadata.usage.details.modalities == {"prompt": {"VIDEO": 258}}


def test_a_compaction_call_is_priced_beside_the_answer() -> None:
    name = "response__test_anthropic_compaction_usage_with_cache__0.json"
    body = json.loads((HELDOUT / "anthropic" / name).read_text())
    usage = usage_from_wire(body["usage"])
    [compaction] = [i for i in body["usage"]["iterations"] if i["type"] == "compaction"]
    assert usage.details is not None and usage.details.extra_calls == [ExtraCallUsage(
        kind="compaction", input_tokens=compaction["input_tokens"], output_tokens=compaction["output_tokens"],
        cache_creation_input_tokens=compaction["cache_creation_input_tokens"])]
    table, model = default_price_table(), "anthropic:claude-sonnet-4-5"
    alone = Usage(input_tokens=compaction["input_tokens"], output_tokens=compaction["output_tokens"],
                  cache_creation_input_tokens=compaction["cache_creation_input_tokens"])
    answer_only = usage.model_copy(update={"details": None})
    assert table.cost(usage, model)[0] == table.cost(answer_only, model)[0] + table.cost(alone, model)[0]  # type: ignore[operator]


def test_an_advisor_call_keeps_its_own_model_and_is_left_unpriced_when_that_model_is() -> None:
    body = json.loads((HELDOUT / "anthropic" / "response__test_anthropic_advisor_tool__0.json").read_text())
    usage = usage_from_wire(body["usage"])
    assert usage.details is not None and usage.details.extra_calls is not None
    [advisor] = usage.details.extra_calls
    assert (advisor.kind, advisor.model, advisor.input_tokens) == ("advisor_message", "claude-opus-4-8", 2518)
    table, model = default_price_table(), "anthropic:claude-sonnet-4-5"
    assert table.price_for("anthropic:claude-opus-4-8") is None  # not in the table: the advisor call adds nothing
    assert table.cost(usage, model) == table.cost(usage.model_copy(update={"details": None}), model)
