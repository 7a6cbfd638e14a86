"""Gemini hosted tools on recorded traffic: code execution parts and Google Search / URL-context grounding.

Each recorded answer is served through ModelClient over MockTransport (body and stream). Code parts
become hosted blocks that go back to Gemini exactly as recorded (the second recorded request of
the same exchange is the oracle) and to any other provider as text; grounding becomes citations
on the answer's text, with the metadata kept for display.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from adapters.gemini.gemini_oracle import validate_with_sdk
from fixture_files import read_bytes, read_json
from mock_http import serve, sse_response

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.gemini.adapter import GeminiAdapter
from metis_core.adapters.gemini.hosted import GROUNDING_KEY, URL_CONTEXT_KEY
from metis_core.adapters.gemini.request_reader import read_request
from metis_core.adapters.gemini.signatures import to_urlsafe_base64
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.errors import CapabilityMismatchError
from metis_core.messages import (
    Message,
    MessageComplete,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
    TextBlock,
    ToolUseStart,
    user_message,
)
from metis_core.models.registry import default_registry

CODE_MODEL = "gemini:gemini-3-flash-preview"
SEARCH_MODEL = "gemini:gemini-2.5-pro"
HISTORY = [user_message("go")]


def parsed(name: str, model: str) -> Message:
    client, _ = serve(httpx.Response(200, content=read_bytes("gemini", name)), provider="gemini")
    return client.complete(HISTORY, model=model)


def streamed(name: str, model: str) -> tuple[Message, list[Any]]:
    client, _ = serve(sse_response(read_bytes("gemini", name)), provider="gemini")
    events = list(client.stream(HISTORY, model=model))
    assert isinstance(events[-1], MessageComplete)
    message: Message = events[-1].message
    return message, events


def model_turn(message: Message, model: str, **options: Any) -> tuple[list[dict[str, Any]], Any]:
    wire = GeminiAdapter().to_wire([*HISTORY, message], [], AdapterOptions(model=model, **options), ToolIdMap())
    validate_with_sdk(wire.body)
    (turn,) = [c for c in wire.body["contents"] if c["role"] == "model"]
    return turn["parts"], wire


def kinds(message: Message) -> list[str]:
    return [block.type for block in message.content]


# --- code execution ----------------------------------------------------------------------------


def test_code_parts_become_hosted_blocks_linked_by_their_ids() -> None:
    message = parsed("response__hosted_code_execution_gemini3.json", CODE_MODEL)
    assert kinds(message) == ["provider_tool_call", "provider_tool_result", "provider_tool_call",
                              "provider_tool_result", "text"]
    calls = [b for b in message.content if isinstance(b, ProviderToolCallBlock)]
    results = [b for b in message.content if isinstance(b, ProviderToolResultBlock)]
    recorded = [p for p in read_json("gemini", "response__hosted_code_execution_gemini3.json")["candidates"][0]
                ["content"]["parts"] if "executableCode" in p]
    assert [c.id for c in calls] == [p["executableCode"]["id"] for p in recorded]
    assert [r.tool_use_id for r in results] == [c.id for c in calls]
    assert calls[0].name == "code_execution" and calls[0].input["code"] == recorded[0]["executableCode"]["code"]
    assert calls[0].text.startswith("[hosted tool call: code_execution]\n```python\n")
    assert all(not r.is_error for r in results) and results[0].text.startswith("[hosted tool result: code_execution]")
    assert message.metadata.stop_reason == "end_turn"
    assert "skipped_parts" not in (message.metadata.provider_raw or {})


def test_code_parts_go_back_to_gemini_as_the_recorded_next_request_sent_them() -> None:
    message = parsed("response__hosted_code_execution_gemini3.json", CODE_MODEL)
    parts, wire = model_turn(message, CODE_MODEL)
    assert wire.dropped == []
    recorded = read_json("gemini", "response__hosted_code_execution_gemini3.json")["candidates"][0]["content"]["parts"]
    expected = [{**p, "thoughtSignature": to_urlsafe_base64(p["thoughtSignature"])} if "thoughtSignature" in p else p
                for p in recorded]
    assert parts == expected


def test_a_recorded_replay_request_read_and_rebuilt_is_the_same_request() -> None:
    body = read_json("gemini", "request__hosted_code_execution_history_replay.json")
    read = read_request(body, model=CODE_MODEL)
    assert read.skipped == []
    assert read.options.provider_tools == [{"codeExecution": {}}]
    model_message = next(m for m in read.messages if m.role.value == "assistant")
    assert kinds(model_message)[:4] == ["provider_tool_call", "provider_tool_result"] * 2
    rebuilt = GeminiAdapter().to_wire(read.messages, read.tools, read.options, ToolIdMap())
    validate_with_sdk(rebuilt.body)
    assert rebuilt.body["contents"] == body["contents"] and rebuilt.body["tools"] == body["tools"]


def test_a_stream_gives_the_same_hosted_blocks_and_no_client_tool_call() -> None:
    message, events = streamed("stream__hosted_code_execution_gemini3.sse", CODE_MODEL)
    assert not any(isinstance(e, ToolUseStart) for e in events)  # nothing for an agent to run
    assert kinds(message) == ["provider_tool_call", "provider_tool_result", "text"]
    call, result, text = message.content
    assert isinstance(call, ProviderToolCallBlock) and isinstance(result, ProviderToolResultBlock)
    assert call.id == result.tool_use_id == "8xju7mua"
    assert result.text.endswith("-428330955.97745")
    assert isinstance(text, TextBlock) and text.text.startswith("The result of $65465")


def test_another_gemini_model_gets_the_code_parts_without_their_signatures() -> None:
    message = parsed("response__hosted_code_execution_gemini3.json", CODE_MODEL)
    parts, wire = model_turn(message, "gemini:gemini-2.5-pro")
    assert [p for p in parts if "executableCode" in p and "thoughtSignature" in p] == []
    assert sum(d.block_type == "thought_signature" for d in wire.dropped) >= 2


@pytest.mark.parametrize("adapter", [AnthropicAdapter(), OpenAIChatAdapter()], ids=["anthropic", "openai"])
def test_other_providers_get_the_code_and_output_as_text_with_the_lossy_warning(adapter: Any) -> None:
    message = parsed("response__hosted_code_execution_gemini3.json", CODE_MODEL)
    model = "anthropic:claude-sonnet-4-5" if isinstance(adapter, AnthropicAdapter) else "openai:gpt-4o"
    wire = adapter.to_wire([*HISTORY, message], [], AdapterOptions(model=model), ToolIdMap())
    sent = json.dumps(wire.body)
    code = read_json("gemini", "response__hosted_code_execution_gemini3.json")["candidates"][0]["content"]["parts"][0]
    assert json.dumps(code["executableCode"]["code"])[1:-1] in sent  # the code, as text
    assert "executableCode" not in sent and "thoughtSignature" not in sent
    assert {d.block_type for d in wire.dropped} >= {"provider_tool_call", "provider_tool_result"}


def test_a_failed_run_is_an_error_result() -> None:
    body = read_json("gemini", "response__hosted_code_execution_gemini3.json")
    result = next(p for p in body["candidates"][0]["content"]["parts"] if "codeExecutionResult" in p)
    result["codeExecutionResult"] = {**result["codeExecutionResult"], "outcome": "OUTCOME_FAILED",
                                     "output": "ZeroDivisionError: division by zero\n"}
    client, _ = serve(httpx.Response(200, content=json.dumps(body).encode()), provider="gemini")
    message = client.complete(HISTORY, model=CODE_MODEL)
    failed = next(b for b in message.content if isinstance(b, ProviderToolResultBlock))
    assert failed.is_error and "(OUTCOME_FAILED)" in failed.text and "ZeroDivisionError" in failed.text


def test_code_parts_without_ids_pair_by_position_in_a_body_and_a_stream_alike() -> None:
    body = read_json("gemini", "response__hosted_code_execution_gemini3.json")
    for part in body["candidates"][0]["content"]["parts"]:
        for key in ("executableCode", "codeExecutionResult"):
            if key in part:
                part[key] = {k: v for k, v in part[key].items() if k != "id"}  # as Gemini 2 sends them
    client, _ = serve(httpx.Response(200, content=json.dumps(body).encode()), provider="gemini")
    message = client.complete(HISTORY, model=CODE_MODEL)
    calls = [b for b in message.content if isinstance(b, ProviderToolCallBlock)]
    results = [b for b in message.content if isinstance(b, ProviderToolResultBlock)]
    assert [c.id for c in calls] == ["code_execution_1", "code_execution_3"]
    assert [r.tool_use_id for r in results] == [c.id for c in calls]


# --- grounding ---------------------------------------------------------------------------------


def test_search_grounding_becomes_citations_on_the_answer_and_the_metadata_is_kept() -> None:
    body = read_json("gemini", "response__hosted_google_search_grounding.json")
    metadata = body["candidates"][0]["groundingMetadata"]
    message = parsed("response__hosted_google_search_grounding.json", SEARCH_MODEL)
    (text,) = message.content
    assert isinstance(text, TextBlock) and text.citations
    assert len(text.citations) == sum(len(s["groundingChunkIndices"]) for s in metadata["groundingSupports"])
    first = text.citations[0]
    assert first.url == metadata["groundingChunks"][0]["web"]["uri"]
    assert first.title == metadata["groundingChunks"][0]["web"]["title"]
    assert first.cited_text == metadata["groundingSupports"][0]["segment"]["text"]
    assert first.origin is not None and first.origin.same_api("gemini", "generate_content")
    raw = message.metadata.provider_raw or {}
    assert raw[GROUNDING_KEY]["webSearchQueries"] == ["weather in San Francisco today"]
    assert "renderedContent" in raw[GROUNDING_KEY]["searchEntryPoint"]  # what Google asks apps to show


def test_a_grounded_stream_gives_the_citations_of_its_last_chunk() -> None:
    message, _ = streamed("stream__hosted_google_search_grounding.sse", SEARCH_MODEL)
    (text,) = message.content
    assert isinstance(text, TextBlock) and text.text.startswith("### Weather in San Francisco")
    assert text.citations is not None and len(text.citations) >= 8
    assert all(c.url and c.cited_text for c in text.citations)
    assert (message.metadata.provider_raw or {})[GROUNDING_KEY]["webSearchQueries"]


def test_url_context_grounding_keeps_the_retrieved_urls() -> None:
    message = parsed("response__hosted_url_context_grounding.json", "gemini:gemini-2.5-flash")
    (text,) = message.content
    assert isinstance(text, TextBlock) and text.citations
    assert text.citations[0].url == "https://ai.pydantic.dev"
    raw = message.metadata.provider_raw or {}
    assert raw[URL_CONTEXT_KEY]["urlMetadata"][0]["urlRetrievalStatus"] == "URL_RETRIEVAL_STATUS_SUCCESS"


def test_own_citations_go_back_to_gemini_silently_and_elsewhere_with_the_warning() -> None:
    message = parsed("response__hosted_google_search_grounding.json", SEARCH_MODEL)
    parts, wire = model_turn(message, SEARCH_MODEL)
    recorded = read_json("gemini", "response__hosted_google_search_grounding.json")["candidates"][0]["content"]["parts"]
    assert wire.dropped == [] and parts == recorded
    other = AnthropicAdapter().to_wire([*HISTORY, message], [], AdapterOptions(model="anthropic:claude-sonnet-4-5"),
                                       ToolIdMap())
    (dropped,) = [d for d in other.dropped if d.block_type == "citations"]
    assert "google.com/search" in dropped.reason


def test_a_support_pointing_past_the_sources_is_left_out() -> None:
    body = read_json("gemini", "response__hosted_google_search_grounding.json")
    metadata = body["candidates"][0]["groundingMetadata"]
    metadata["groundingSupports"][0]["groundingChunkIndices"] = [0, 99, "x"]
    metadata["groundingSupports"].append("not a support")
    valid = sum(1 for s in metadata["groundingSupports"] if isinstance(s, dict)
                for i in s["groundingChunkIndices"] if isinstance(i, int) and i < len(metadata["groundingChunks"]))
    client, _ = serve(httpx.Response(200, content=json.dumps(body).encode()), provider="gemini")
    (text,) = client.complete(HISTORY, model=SEARCH_MODEL).content
    assert isinstance(text, TextBlock) and text.citations
    assert len(text.citations) == valid == len(metadata["groundingSupports"]) - 1  # 99, "x", the string: out


# --- asking for hosted tools -------------------------------------------------------------------


def test_hosted_tools_by_canonical_name_are_the_recorded_tool_entries() -> None:
    recorded = read_json("gemini", "request__hosted_google_search_tool.json")
    wire = GeminiAdapter().to_wire(HISTORY, [], AdapterOptions(model=SEARCH_MODEL, hosted_tools={"web_search": {}}),
                                   ToolIdMap())
    assert wire.body["tools"] == recorded["tools"]
    both = GeminiAdapter().to_wire(HISTORY, [], AdapterOptions(
        model=CODE_MODEL, hosted_tools={"code_execution": {}, "web_fetch": {}}), ToolIdMap())
    validate_with_sdk(both.body)
    assert both.body["tools"] == [{"codeExecution": {}}, {"urlContext": {}}]


def test_a_hosted_tool_gemini_lacks_is_refused_before_sending() -> None:
    with pytest.raises(CapabilityMismatchError, match="file_search"):
        GeminiAdapter().to_wire(HISTORY, [], AdapterOptions(model=SEARCH_MODEL, hosted_tools={"file_search": {}}),
                                ToolIdMap())


def test_another_apis_provider_tool_is_not_sent_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    options = AdapterOptions(model=SEARCH_MODEL, provider_tools=[
        {"type": "web_search_20250305", "name": "web_search"}, {"googleSearch": {}}])
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.gemini"):
        wire = GeminiAdapter().to_wire(HISTORY, [], options, ToolIdMap())
    assert wire.body["tools"] == [{"googleSearch": {}}]
    assert "web_search_20250305 is not a Gemini tool" in caplog.text


def test_the_registry_declares_gemini_hosted_tools_and_flash_lite_2_0_has_none() -> None:
    registry = default_registry()
    assert set(registry.get(SEARCH_MODEL).capabilities.hosted_tools) == {"web_search", "web_fetch", "code_execution"}
    assert registry.get("gemini:gemini-2.0-flash-lite").capabilities.hosted_tools == ()
