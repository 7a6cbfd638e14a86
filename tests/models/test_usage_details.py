"""Usage detail counts (cache TTLs, hosted tool requests, audio, predictions, Gemini modalities)
read from real recordings, stored and reloaded equal, and the one-hour cache writes priced."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from fixture_files import read_bytes
from mock_http import serve, sse_response

from metis_core.adapters.anthropic.usage import usage_from_wire
from metis_core.adapters.openai_chat.usage import usage_from_chat
from metis_core.errors import PriceTableError
from metis_core.messages import Message, MessageComplete, MessageMetadata, Usage, UsageDetails, user_message
from metis_core.models.price_file import PriceEntry, PriceVersion
from metis_core.models.pricing import PriceTable
from metis_core.store import SessionStore
from metis_core.store.message_rows import message_row, message_row_general


def _stored_and_reloaded(message: Message, tmp_path: Path) -> Message:
    with SessionStore(tmp_path / "metis.db") as sessions:
        session = sessions.create_session(tmp_path, active_model="anthropic:x")
        stored = message.model_copy(update={"session_id": session.id})
        sessions.append_message(stored)
        [reloaded] = [m for m in sessions.load_messages(session.id) if m.id == stored.id]
    assert reloaded == stored
    return reloaded


def test_anthropic_server_tool_counts_from_a_recorded_answer_survive_the_store(tmp_path: Path) -> None:
    body = read_bytes("anthropic", "response__hosted_web_search_thinking_live.json")
    client, _ = serve(httpx.Response(200, content=body))
    message = client.complete([user_message("hi")], model="anthropic:claude-sonnet-4-5")
    usage = message.metadata.usage
    assert usage is not None and usage.details == UsageDetails(web_search_requests=1)
    reloaded = _stored_and_reloaded(message, tmp_path)
    assert reloaded.metadata.usage is not None and reloaded.metadata.usage.details == usage.details


def test_anthropic_stream_keeps_the_server_tool_counts_of_its_final_usage() -> None:
    body = read_bytes("anthropic", "stream__hosted_web_search_live.sse")
    client, _ = serve(sse_response(body))
    events = list(client.stream([user_message("hi")], model="anthropic:claude-sonnet-4-5"))
    assert isinstance(events[-1], MessageComplete)
    usage = events[-1].message.metadata.usage
    recorded = [json.loads(line[5:])["usage"] for line in body.decode().splitlines()
                if line.startswith("data:") and '"message_delta"' in line]
    assert usage is not None and usage.details is not None
    assert usage.details.web_search_requests == recorded[-1]["server_tool_use"]["web_search_requests"] > 0


def test_anthropic_one_hour_cache_writes_are_kept_apart_from_the_total() -> None:
    """The recorded usage with its (zero) TTL split filled in as the API reference documents it."""
    raw: dict[str, Any] = json.loads(read_bytes("anthropic", "response__hosted_web_search_thinking_live.json"))["usage"]
    raw.update(cache_creation_input_tokens=3000,
               cache_creation={"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000})
    usage = usage_from_wire(raw)
    assert usage.cache_creation_input_tokens == 3000
    assert usage.details == UsageDetails(cache_write_1h_tokens=2000, web_search_requests=1)
    assert usage_from_wire({"input_tokens": 5, "output_tokens": 1}).details is None


def test_openai_chat_zero_details_leave_no_details_and_reported_ones_are_kept() -> None:
    body = read_bytes("openai_chat", "response__reasoning_tokens_custom_tool_call.json")
    raw: dict[str, Any] = json.loads(body)["usage"]
    assert usage_from_chat(raw).details is None  # every detail the recording carries is 0
    assert usage_from_chat(raw).reasoning_tokens == 192
    raw["prompt_tokens_details"]["audio_tokens"] = 40
    raw["completion_tokens_details"].update(audio_tokens=12, accepted_prediction_tokens=9, rejected_prediction_tokens=3)
    assert usage_from_chat(raw).details == UsageDetails(audio_input_tokens=40, audio_output_tokens=12,
                                                        accepted_prediction_tokens=9, rejected_prediction_tokens=3)


@pytest.mark.parametrize("name", ["response__hosted_google_search_grounding.json",
                                  "response__hosted_url_context_grounding.json"])
def test_gemini_tool_use_prompt_tokens_and_modalities_survive_the_store(name: str, tmp_path: Path) -> None:
    meta = json.loads(read_bytes("gemini", name))["usageMetadata"]
    client, _ = serve(httpx.Response(200, content=read_bytes("gemini", name)), provider="gemini")
    message = client.complete([user_message("hi")], model="gemini:gemini-2.5-flash")
    usage = message.metadata.usage
    assert usage is not None and usage.details is not None
    assert usage.details.tool_use_prompt_tokens == meta["toolUsePromptTokenCount"] > 0
    assert usage.details.modalities == {
        "prompt": {d["modality"]: d["tokenCount"] for d in meta["promptTokensDetails"]},
        "tool_use_prompt": {d["modality"]: d["tokenCount"] for d in meta["toolUsePromptTokensDetails"]},
    }
    reloaded = _stored_and_reloaded(message, tmp_path)
    assert reloaded.metadata.usage == usage


def test_usage_stored_before_details_existed_still_loads() -> None:
    old = {"input_tokens": 3, "output_tokens": 4, "cached_input_tokens": 0, "cache_creation_input_tokens": 0,
           "reasoning_tokens": 0, "cost_usd": "0.1", "pricing_version": "v", "latency_ms": 5}
    assert Usage.model_validate_json(json.dumps(old)).details is None


def _table(**rates: str) -> PriceTable:
    entry = PriceEntry(**{kind: Decimal(value) for kind, value in rates.items()})  # type: ignore[arg-type]
    return PriceTable([PriceVersion("t1", date(2025, 1, 1), None, {"anthropic:claude-x": entry})])


def test_one_hour_cache_writes_cost_twice_input_by_default_and_their_own_rate_when_given() -> None:
    usage = Usage(input_tokens=1_000_000, cache_creation_input_tokens=3_000_000,
                  details=UsageDetails(cache_write_1h_tokens=2_000_000))
    default = _table(input="3", output="15", cache_write="3.75")
    assert default.cost(usage, "anthropic:claude-x")[0] == Decimal("3") + Decimal("3.75") + 2 * Decimal("6")
    given = _table(input="3", output="15", cache_write="3.75", cache_write_1h="5")
    assert given.cost(usage, "anthropic:claude-x")[0] == Decimal("3") + Decimal("3.75") + 2 * Decimal("5")
    without = usage.model_copy(update={"details": None})
    assert default.cost(without, "anthropic:claude-x")[0] == Decimal("3") + 3 * Decimal("3.75")


def test_config_prices_accept_a_one_hour_cache_write_rate_and_reject_a_float() -> None:
    entry = PriceEntry.from_raw({"input": "3", "output": "15", "cache_write_1h": "6.5"}, "config.yaml: prices.x")
    assert entry.rate("cache_write_1h") == Decimal("6.5")
    with pytest.raises(PriceTableError, match="cache_write_1h"):
        PriceEntry.from_raw({"input": "3", "output": "15", "cache_write_1h": 6.5}, "config.yaml: prices.x")


def test_a_plain_message_with_details_is_stored_with_them(tmp_path: Path) -> None:
    """The store's fast metadata dump stands down for detail counts; without them it writes what it did."""
    usage = Usage(input_tokens=7, output_tokens=2, details=UsageDetails(web_fetch_requests=2, cache_write_1h_tokens=5))
    plain = user_message("hi").model_copy(update={"metadata": MessageMetadata(usage=usage)})
    assert message_row(plain) == message_row_general(plain)
    assert _stored_and_reloaded(plain, tmp_path).metadata.usage == usage
    without = plain.model_copy(update={"metadata": MessageMetadata(usage=Usage(input_tokens=7))})
    assert "details" not in message_row(without)[4] and message_row(without) == message_row_general(without)


def test_one_count_among_zero_filled_detail_objects_is_read_and_zeros_alone_add_no_details() -> None:
    zeros = {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0,
             "rejected_prediction_tokens": 0}
    chat = {"prompt_tokens": 10, "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0}}
    assert usage_from_chat({**chat, "completion_tokens_details": zeros}).details is None
    read = usage_from_chat({**chat, "completion_tokens_details": {**zeros, "rejected_prediction_tokens": 3}})
    assert read.details == UsageDetails(rejected_prediction_tokens=3)
    anthropic = {"input_tokens": 10, "output_tokens": 5, "server_tool_use": {"web_search_requests": 0}}
    assert usage_from_wire({**anthropic, "cache_creation": {"ephemeral_1h_input_tokens": 0}}).details is None
    written = usage_from_wire({**anthropic, "cache_creation_input_tokens": 8,
                               "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 8}})
    assert written.details == UsageDetails(cache_write_1h_tokens=8)
