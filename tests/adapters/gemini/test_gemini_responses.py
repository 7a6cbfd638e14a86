"""Gemini generateContent bodies -> canonical Messages: every recorded response, through real HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fixture_files import plain_wire_files, read_bytes, read_json
from mock_http import serve

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import RequestContext
from metis_core.adapters.gemini.adapter import GeminiAdapter
from metis_core.errors import MalformedResponseError
from metis_core.messages import Message, MessageStatus, TextBlock, ThinkingBlock, ToolUseBlock, user_message
from metis_core.transport.wire import WireResponse

# fixture -> (model, stop_reason, tool calls, usage (input, output, reasoning), text prefix)
EXPECTED: dict[str, dict[str, Any]] = {
    "response__function_call_thought_signature.json": {
        "model": "gemini-2.5-pro", "stop": "tool_use", "calls": [("multiply", {"a": 37, "b": 29})],
        "usage": (189, 20 + 92, 92), "text": "", "response_id": "UKPJaIAfo4DUyQ_YxfGYBQ"},
    "response__function_call_thought_signature_2.json": {
        "model": "gemini-2.5-pro", "stop": "tool_use", "calls": [("search_docs", {"query": "recurring revenue"})],
        "usage": (170, 16 + 132, 132), "text": "", "response_id": "5I7JaMf5Hcqg1MkP0pmWgQg"},
    "response__function_call_without_signature.json": {
        "model": "gemini-2.5-pro", "stop": "tool_use", "calls": [("exec_python", {"code": "print(15)"})],
        "usage": (259, 18, 0), "text": "", "response_id": "7cLIaKiXDbSt1MkPq6TyyAo"},
    "response__parallel_function_calls.json": {
        "model": "gemini-3-flash-preview", "stop": "tool_use", "calls": [("generate_topic", {})] * 3,
        "usage": (83, 30 + 190, 190), "text": "", "response_id": "wOd8abGuO5rgz7IP5tLEGA"},
    "response__text.json": {
        "model": "gemini-2.5-pro", "stop": "end_turn", "calls": [], "usage": (225, 16, 0),
        "text": "OK. 37 times 29 is 1073.", "response_id": "gKPJaPKPLa2x1MkP85uT-Q0"},
    "response__thinking_thought_parts.json": {
        "model": "gemini-3-pro-preview", "stop": "end_turn", "calls": [], "usage": (29, 736 + 1001, 1001),
        "text": "Crossing the street safely is a fundamental skill", "response_id": "ON4gaYT4Gc20qtsP2bSiiQ0"},
}


def test_every_response_fixture_has_expectations() -> None:
    assert {p.name for p in plain_wire_files("gemini", "response")} == set(EXPECTED)


def parse(name: str, model: str | None = None, ids: ToolIdMap | None = None) -> Message:
    model = model or "gemini:" + EXPECTED[name]["model"]
    context = RequestContext(model=model, tool_ids=ids or ToolIdMap(), session_id="sess_g")
    return GeminiAdapter().from_wire_response(WireResponse(200, read_bytes("gemini", name)), context)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_response_parses_through_model_client_with_real_values(name: str) -> None:
    want = EXPECTED[name]
    client, server = serve(httpx.Response(200, content=read_bytes("gemini", name)), provider="gemini",
                           api_key="AIza-test-SECRET")
    message = client.complete([user_message("hi")], model="gemini:" + want["model"])
    request = server.requests[0]
    assert request.url.path == f"/v1beta/models/{want['model']}:generateContent"
    assert request.headers["x-goog-api-key"] == "AIza-test-SECRET"
    assert "key" not in request.url.params and "SECRET" not in str(request.url)

    assert message.status is MessageStatus.COMPLETE
    assert message.metadata.stop_reason == want["stop"]
    assert [(u.name, u.input) for u in message.tool_uses()] == want["calls"]
    assert message.text().startswith(want["text"])
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == want["usage"]
    raw = message.metadata.provider_raw or {}
    assert raw["response_id"] == want["response_id"]
    assert raw["finish_reason"] == "STOP"
    assert raw["model_version"] == want["model"]
    assert all(u.id.startswith("tu_") for u in message.tool_uses())


def test_function_call_signature_is_kept_with_its_call_in_standard_base64() -> None:
    body = read_json("gemini", "response__function_call_thought_signature.json")
    wire_signature = body["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    message = parse("response__function_call_thought_signature.json")
    table = (message.metadata.provider_raw or {})["thought_signatures"]
    assert table["origin"] == {"provider": "gemini", "api": "generate_content", "model": "gemini-2.5-pro"}
    assert table["tool_use"] == {message.tool_uses()[0].id: wire_signature}
    assert "+" in wire_signature and "/" in wire_signature  # responses carry the standard alphabet


def test_parallel_calls_keep_one_signature_on_the_first_call_only_and_never_merge() -> None:
    message = parse("response__parallel_function_calls.json")
    uses = message.tool_uses()
    assert len(uses) == 3 and len({u.id for u in uses}) == 3
    table = (message.metadata.provider_raw or {})["thought_signatures"]
    assert list(table["tool_use"]) == [uses[0].id]
    assert table["tool_use"][uses[0].id].startswith("Es8FCswFAXLI2nxFGW9oAYt0fTQoHlYcudYTgqNXlir9nzbXoqFXqLY9")
    assert (message.metadata.provider_raw or {})["finish_message"] == "Model generated function call(s)."


def test_response_without_signature_stores_no_signature_table() -> None:
    message = parse("response__function_call_without_signature.json")
    assert "thought_signatures" not in (message.metadata.provider_raw or {})


def test_thought_parts_become_a_thinking_block_and_the_text_signature_is_kept_by_text_ordinal() -> None:
    body = read_json("gemini", "response__thinking_thought_parts.json")
    parts = body["candidates"][0]["content"]["parts"]
    message = parse("response__thinking_thought_parts.json")
    thinking, text = message.content
    assert isinstance(thinking, ThinkingBlock) and isinstance(text, TextBlock)
    assert thinking.text == parts[0]["text"]
    assert thinking.signature is None and thinking.origin is None  # the thought part itself was unsigned
    assert text.text == parts[1]["text"]
    table = (message.metadata.provider_raw or {})["thought_signatures"]
    assert table["text"] == {"0": parts[1]["thoughtSignature"]}


def test_signed_thought_part_puts_the_signature_and_origin_on_the_thinking_block() -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "plan", "thought": True, "thoughtSignature": "c2ln_-8="},
        {"text": "answer"}]}, "finishReason": "STOP"}]}
    context = RequestContext(model="gemini:gemini-2.5-flash")
    message = GeminiAdapter().from_wire_response(WireResponse(200, _json(body)), context)
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.signature == "c2ln/+8="  # normalized to the standard alphabet
    assert thinking.origin is not None and thinking.origin.matches("gemini", "generate_content", "gemini-2.5-flash")


def test_cached_content_tokens_are_taken_out_of_input_and_thoughts_added_to_output() -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "x"}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1000, "cachedContentTokenCount": 600, "candidatesTokenCount": 50,
                              "thoughtsTokenCount": 25, "totalTokenCount": 1075}}
    message = GeminiAdapter().from_wire_response(WireResponse(200, _json(body)),
                                                 RequestContext(model="gemini:gemini-2.5-flash"))
    usage = message.metadata.usage
    assert usage is not None
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens, usage.reasoning_tokens) == (
        400, 600, 75, 25)


@pytest.mark.parametrize(
    ("finish", "stop", "status"),
    [("MAX_TOKENS", "max_tokens", MessageStatus.COMPLETE), ("SAFETY", "refusal", MessageStatus.COMPLETE),
     ("RECITATION", "refusal", MessageStatus.COMPLETE), ("PROHIBITED_CONTENT", "refusal", MessageStatus.COMPLETE),
     ("MALFORMED_FUNCTION_CALL", "error", MessageStatus.PARTIAL), ("STOP", "end_turn", MessageStatus.COMPLETE)],
)
def test_finish_reasons_map_to_canonical_stop_reasons(finish: str, stop: str, status: MessageStatus) -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": "partial answer"}]},
                            "finishReason": finish}]}
    message = GeminiAdapter().from_wire_response(WireResponse(200, _json(body)),
                                                 RequestContext(model="gemini:gemini-2.5-flash"))
    assert (message.metadata.stop_reason, message.status) == (stop, status)
    assert (message.metadata.provider_raw or {})["finish_reason"] == finish


def test_a_blocked_prompt_is_a_refusal_with_the_block_reason_kept() -> None:
    body = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 9}}
    message = GeminiAdapter().from_wire_response(WireResponse(200, _json(body)),
                                                 RequestContext(model="gemini:gemini-2.5-flash"))
    assert message.metadata.stop_reason == "refusal"
    assert (message.metadata.provider_raw or {})["block_reason"] == "PROHIBITED_CONTENT"


def test_function_call_with_id_maps_to_the_same_canonical_id_each_time() -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"id": "fc_1", "name": "f", "args": {"x": 1}}}]}, "finishReason": "STOP"}]}
    ids = ToolIdMap()
    first = GeminiAdapter().from_wire_response(WireResponse(200, _json(body)),
                                               RequestContext(model="gemini:gemini-2.5-flash", tool_ids=ids))
    canonical = first.tool_uses()[0].id
    assert ids.lookup_canonical("gemini", "fc_1") == canonical
    assert ids.provider_id("gemini", canonical) == "fc_1"


def test_unsupported_output_parts_are_skipped_and_named() -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [
        {"fileData": {"mimeType": "video/mp4", "fileUri": "gs://b/v.mp4"}}, {"text": "done"}]},
        "finishReason": "STOP"}]}
    message = GeminiAdapter().from_wire_response(WireResponse(200, _json(body)),
                                                 RequestContext(model="gemini:gemini-2.5-flash"))
    assert message.text() == "done"
    assert (message.metadata.provider_raw or {})["skipped_parts"] == ["fileData"]  # code parts: tests/adapters/hosted


@pytest.mark.parametrize(
    ("body", "problem"),
    [(b"<html>502 Bad Gateway</html>", "not JSON"), (b"[1, 2]", "not a JSON object"),
     (b'{"usageMetadata": {}}', "neither candidates nor promptFeedback"),
     (b'{"candidates": []}', "not a non-empty list")],
)
def test_malformed_bodies_raise_malformed_response_error_naming_the_problem(body: bytes, problem: str) -> None:
    with pytest.raises(MalformedResponseError, match=problem) as raised:
        GeminiAdapter().from_wire_response(WireResponse(200, body, {"x-goog-request-id": "r9"}),
                                           RequestContext(model="gemini:gemini-2.5-flash"))
    assert raised.value.provider == "gemini"


def test_tool_call_arguments_that_are_not_an_object_make_the_message_partial() -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "f", "args": [1, 2]}}]}, "finishReason": "STOP"}]}
    message = GeminiAdapter().from_wire_response(WireResponse(200, _json(body)),
                                                 RequestContext(model="gemini:gemini-2.5-flash"))
    assert message.status is MessageStatus.PARTIAL
    assert not any(isinstance(b, ToolUseBlock) for b in message.content)


def _json(body: Any) -> bytes:
    import orjson

    return orjson.dumps(body)
