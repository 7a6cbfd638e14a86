"""Gemini 3 server-side tool parts (`toolCall` / `toolResponse`) and generated images, on recorded traffic.

A search Google ran for gemini-3-flash-preview (body and stream) and an image gemini-3-pro-image-preview
made are served through ModelClient over MockTransport. Both become hosted blocks, never client
tool calls; they go back to Gemini exactly as recorded (signatures in the SDK's URL-safe alphabet, and
the body checked by the google-genai types) and to any other provider as text, with the lossy WARN.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
from adapters.gemini.gemini_oracle import validate_with_sdk
from fixture_files import read_bytes, read_json
from mock_http import serve, sse_response

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.gemini.adapter import GeminiAdapter
from metis_core.adapters.gemini.hosted_parts import GENERATED_IMAGE, generated_image
from metis_core.adapters.gemini.request_reader import read_request
from metis_core.adapters.gemini.signatures import to_urlsafe_base64
from metis_core.messages import (
    Message,
    MessageComplete,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
    TextBlock,
    ToolUseStart,
    user_message,
)

SEARCH = "response__hosted_server_tool_google_search_gemini3.json"
SEARCH_STREAM = "stream__hosted_server_tool_google_search_gemini3.sse"
IMAGE = "response__hosted_generated_image_gemini3_pro_image.json"
FLASH = "gemini:gemini-3-flash-preview"
IMAGE_MODEL = "gemini:gemini-3-pro-preview"  # recorded on gemini-3-pro-image-preview, which the registry lacks
HISTORY = [user_message("go")]


def parsed(name: str, model: str) -> Message:
    client, _ = serve(httpx.Response(200, content=read_bytes("gemini", name)), provider="gemini")
    return client.complete(HISTORY, model=model)


def recorded_parts(name: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = read_json("gemini", name)["candidates"][0]["content"]["parts"]
    return parts


def as_sent(part: dict[str, Any]) -> dict[str, Any]:
    """A recorded part as the google-genai SDK sends it back: bytes fields in the URL-safe alphabet."""
    part = dict(part)
    if "thoughtSignature" in part:
        part["thoughtSignature"] = to_urlsafe_base64(part["thoughtSignature"])
    if "inlineData" in part:
        part["inlineData"] = {**part["inlineData"], "data": to_urlsafe_base64(part["inlineData"]["data"])}
    return part


def model_turn(message: Message, model: str) -> tuple[list[dict[str, Any]], Any]:
    wire = GeminiAdapter().to_wire([*HISTORY, message], [], AdapterOptions(model=model), ToolIdMap())
    validate_with_sdk(wire.body)
    (turn,) = [c for c in wire.body["contents"] if c["role"] == "model"]
    return turn["parts"], wire


def test_a_search_google_ran_is_a_hosted_call_and_result_linked_by_id() -> None:
    message = parsed(SEARCH, FLASH)
    call, result, text = message.content
    parts = recorded_parts(SEARCH)
    assert isinstance(call, ProviderToolCallBlock) and isinstance(result, ProviderToolResultBlock)
    assert (call.id, call.name, call.input) == ("0yzlft9k", "web_search", {"queries": ["largest city in Mexico"]})
    assert (result.tool_use_id, result.name) == ("0yzlft9k", "web_search_result")
    assert call.payload == parts[0] and result.payload == parts[1]  # thought signatures included
    assert call.text == "[hosted tool call: web_search]\nlargest city in Mexico"
    assert result.text == "[hosted tool result: web_search]"  # the search chips are markup for apps, not facts
    assert isinstance(text, TextBlock) and "Mexico City" in text.text
    assert message.tool_uses() == [] and message.metadata.stop_reason == "end_turn"
    assert "skipped_parts" not in (message.metadata.provider_raw or {})


def test_a_streamed_search_gives_the_same_blocks_and_no_client_tool_call() -> None:
    client, _ = serve(sse_response(read_bytes("gemini", SEARCH_STREAM)), provider="gemini")
    events = list(client.stream(HISTORY, model=FLASH))
    assert not any(isinstance(e, ToolUseStart) for e in events)  # nothing for an agent to run
    assert isinstance(events[-1], MessageComplete)
    call, result, text = events[-1].message.content
    assert isinstance(call, ProviderToolCallBlock) and isinstance(result, ProviderToolResultBlock)
    assert call.name == "web_search" and call.input == {"queries": ["largest city in Mexico"]}
    assert result.tool_use_id == call.id == call.payload["toolCall"]["id"]
    assert "thoughtSignature" in call.payload and "thoughtSignature" in result.payload
    assert isinstance(text, TextBlock) and text.text.startswith('{\n  "city": "Mexico City"')


def test_server_tool_parts_go_back_to_gemini_as_recorded_with_their_signatures() -> None:
    parts, wire = model_turn(parsed(SEARCH, FLASH), FLASH)
    assert wire.dropped == []
    assert parts == [as_sent(p) for p in recorded_parts(SEARCH)]


def test_another_gemini_model_gets_the_parts_without_their_signatures() -> None:
    parts, wire = model_turn(parsed(SEARCH, FLASH), "gemini:gemini-2.5-pro")
    assert [p for p in parts if "thoughtSignature" in p] == []
    assert [p["toolCall"]["id"] for p in parts if "toolCall" in p] == ["0yzlft9k"]
    assert sum(d.block_type == "thought_signature" for d in wire.dropped) == 3


def test_another_provider_gets_the_search_as_text_with_the_lossy_warning() -> None:
    wire = AnthropicAdapter().to_wire([*HISTORY, parsed(SEARCH, FLASH)], [],
                                      AdapterOptions(model="anthropic:claude-sonnet-4-5"), ToolIdMap())
    sent = json.dumps(wire.body)
    assert "[hosted tool call: web_search]\\nlargest city in Mexico" in sent
    assert "toolCall" not in sent and "thoughtSignature" not in sent and '"tool_use"' not in sent
    assert {d.block_type for d in wire.dropped} >= {"provider_tool_call", "provider_tool_result"}


def test_a_request_replaying_server_tool_parts_reads_back_and_rebuilds_the_same() -> None:
    _, wire = model_turn(parsed(SEARCH, FLASH), FLASH)
    read = read_request(wire.body, model=FLASH)
    assert read.skipped == []
    model_message = next(m for m in read.messages if m.role.value == "assistant")
    assert [b.type for b in model_message.content] == ["provider_tool_call", "provider_tool_result", "text"]
    rebuilt = GeminiAdapter().to_wire(read.messages, read.tools, read.options, ToolIdMap())
    assert rebuilt.body["contents"] == wire.body["contents"]


def test_a_generated_image_is_kept_whole_and_readable_as_a_canonical_image() -> None:
    message = parsed(IMAGE, IMAGE_MODEL)
    text, image = message.content
    parts = recorded_parts(IMAGE)
    assert isinstance(text, TextBlock) and text.text.startswith("A little axolotl")
    assert isinstance(image, ProviderToolResultBlock) and image.name == GENERATED_IMAGE
    assert image.payload == parts[1]
    assert image.text.startswith("[image generated by gemini-3-pro-preview: image/jpeg, about ")
    canonical = generated_image(image)
    assert canonical is not None and canonical.media_type == "image/jpeg"
    assert base64.b64decode(canonical.source.data).startswith(b"\xff\xd8\xff")  # a JPEG, bytes intact
    usage = message.metadata.usage
    assert usage is not None and usage.details is not None and usage.details.modalities is not None
    assert usage.details.modalities["candidates"] == {"IMAGE": 1120}


def test_a_generated_image_goes_back_to_gemini_as_recorded_and_elsewhere_as_text() -> None:
    message = parsed(IMAGE, IMAGE_MODEL)
    parts, wire = model_turn(message, IMAGE_MODEL)
    assert wire.dropped == [] and parts == [as_sent(p) for p in recorded_parts(IMAGE)]
    other = AnthropicAdapter().to_wire([*HISTORY, message], [], AdapterOptions(model="anthropic:claude-sonnet-4-5"),
                                       ToolIdMap())
    sent = json.dumps(other.body)
    assert "[image generated by gemini-3-pro-preview: image/jpeg" in sent and "inlineData" not in sent
    assert [d.block_type for d in other.dropped] == ["provider_tool_result"]


def test_a_file_search_request_is_read_with_its_tool_and_rebuilt_the_same() -> None:
    body = read_json("gemini", "request__hosted_file_search_tool_gemini3.json")
    read = read_request(body, model=FLASH)
    assert read.skipped == []
    assert read.options.provider_tools == body["tools"]  # fileSearch with its stores, carried as sent
    rebuilt = GeminiAdapter().to_wire(read.messages, read.tools, read.options, ToolIdMap())
    validate_with_sdk(rebuilt.body)
    assert {k: rebuilt.body[k] for k in body} == body  # includeServerSideToolInvocations too


def test_damaged_hosted_parts_still_give_hosted_blocks_and_never_a_tool_call() -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [
        {"toolCall": "not an object"}, {"toolResponse": {"toolType": "GOOGLE_MAPS"}},
        {"inlineData": {"mimeType": "image/png"}}, {"text": "done"}]}, "finishReason": "STOP"}]}
    client, _ = serve(httpx.Response(200, content=json.dumps(body).encode()), provider="gemini")
    message = client.complete(HISTORY, model=FLASH)
    call, result, image, text = message.content
    assert isinstance(call, ProviderToolCallBlock) and call.name == "server_tool" and call.id == "server_tool_1"
    assert isinstance(result, ProviderToolResultBlock) and result.name == "google_maps_result"
    assert result.tool_use_id == "server_tool_1"  # no id: it answers the call before it
    assert isinstance(image, ProviderToolResultBlock) and generated_image(image) is None  # no data to show
    assert isinstance(text, TextBlock) and message.tool_uses() == []
