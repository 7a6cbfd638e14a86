"""Canonical -> Gemini request bodies: recorded requests round-trip, pairing rules, signatures, options."""

from __future__ import annotations

import copy
import inspect
import logging
from typing import Any

import pytest
from adapters.gemini.gemini_oracle import FIXTURE_MODELS, validate_with_sdk
from fixture_files import is_live_verbatim, read_bytes, read_json, wire_files

from metis_core.adapters._common import lossy
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.gemini.adapter import GeminiAdapter
from metis_core.adapters.gemini.request_reader import read_request
from metis_core.adapters.gemini.signatures import GEMINI_3_SKIP_SIGNATURE
from metis_core.errors import InvalidRequestError
from metis_core.messages import (
    BlockOrigin,
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolUseBlock,
    system_message,
    tool_result_message,
    user_message,
)
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.framing import decode_all
from metis_core.transport.wire import WireResponse

# --- every recorded request: read, rebuild, compare -------------------------------------------


def test_every_request_fixture_names_its_model() -> None:
    assert {p.name for p in wire_files("gemini", "request")} == set(FIXTURE_MODELS)


def _rebuild(name: str) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    original = read_json("gemini", name)
    ids = ToolIdMap()
    read = read_request(copy.deepcopy(original), model=FIXTURE_MODELS[name], tool_ids=ids)
    built = GeminiAdapter().to_wire(read.messages, read.tools, read.options, ids)
    return original, built.body, read.skipped


def _semantic(body: dict[str, Any], model: str) -> dict[str, Any]:
    """What may legitimately differ from a re-serialized recording, normalized away:
    - tools are compared as canonical ToolDefinitions (we send `parameters` in Gemini's dialect;
      pydantic-ai sent `parameters_json_schema`), without `additionalProperties: false`, which the
      dialect cannot say (Gemini never invents properties anyway);
    - fileData inner keys are compared in camelCase (Vertex clients send file_uri / mime_type);
    - non-image media parts (video) are removed: they have no canonical form (the reader reports them)."""
    body = copy.deepcopy(body)
    if "tools" in body:
        tools = read_request({"contents": [], "tools": body["tools"]}, model=model).tools
        body["tools"] = [t.model_dump() for t in tools]
        for tool in body["tools"]:
            tool["input_schema"].pop("additionalProperties", None)
    for content in body["contents"]:
        kept = []
        for part in content["parts"]:
            file_data = part.get("fileData")
            if isinstance(file_data, dict):
                part["fileData"] = {"fileUri": file_data.get("fileUri", file_data.get("file_uri")),
                                    "mimeType": file_data.get("mimeType", file_data.get("mime_type"))}
                if not part["fileData"]["mimeType"].startswith("image/"):
                    continue
            kept.append(part)
        content["parts"] = kept
    return body


@pytest.mark.parametrize("name", sorted(FIXTURE_MODELS))
def test_recorded_request_round_trips_through_canonical_form(name: str) -> None:
    original, rebuilt, skipped = _rebuild(name)
    validate_with_sdk(rebuilt)
    if is_live_verbatim("gemini", name):
        assert rebuilt == original
        assert skipped == []
    else:
        assert _semantic(rebuilt, FIXTURE_MODELS[name]) == _semantic(original, FIXTURE_MODELS[name])
        assert skipped == (["a video/mp4 media part (only images are canonical)"]
                           if name == "request__file_data_youtube_url.json" else [])


def test_vertex_snake_case_file_data_is_read_and_written_back_in_camel_case() -> None:
    _, rebuilt, _ = _rebuild("request__file_data_image_url_vertex.json")
    part = rebuilt["contents"][0]["parts"][1]
    assert part == {"fileData": {"fileUri": "https://upload.wikimedia.org/wikipedia/commons/6/6a/"
                                            "Www.wikipedia_screenshot_%282021%29.png", "mimeType": "image/png"}}


def test_inline_image_bytes_are_stored_standard_and_sent_url_safe_like_the_sdk() -> None:
    original = read_json("gemini", "request__image_inline_data_base64.json")
    wire_data = original["contents"][0]["parts"][1]["inlineData"]["data"]
    read = read_request(original, model="gemini:gemini-2.0-flash")
    image = read.messages[1].content[1]
    assert isinstance(image, ImageBlock)
    assert image.source.data.startswith("/9j/") and "_" not in image.source.data and "-" not in image.source.data
    assert wire_data.startswith("_9j_")


# --- thought signatures ------------------------------------------------------------------------


def _first_turn() -> tuple[list[Message], list[ToolDefinition], ToolIdMap]:
    ids = ToolIdMap()
    read = read_request(read_json("gemini", "request__system_instruction_function_declarations.json"),
                        model="gemini:gemini-2.5-pro", tool_ids=ids)
    return read.messages, read.tools, ids


def _answer(name: str, model: str, ids: ToolIdMap) -> Message:
    body = read_bytes("gemini", name)
    context = RequestContext(model=model, tool_ids=ids, session_id="sess_g")
    if name.endswith(".sse"):
        adapter = GeminiAdapter()
        events = list(adapter.stream_response_sync(decode_all(body, "sse"), context))
        message: Message = events[-1].message
        return message
    return GeminiAdapter().from_wire_response(WireResponse(200, body), context)


def test_signature_replays_to_the_same_model_exactly_as_the_official_sdk_sent_it() -> None:
    """Turn 1 request + recorded answer + tool result == the recorded turn 2 request, byte for byte."""
    history, tools, ids = _first_turn()
    answer = _answer("response__function_call_thought_signature.json", "gemini:gemini-2.5-pro", ids)
    result = tool_result_message(answer.tool_uses()[0].id, '{"product": 1073}')
    built = GeminiAdapter().to_wire([*history, answer, result], tools, AdapterOptions(model="gemini:gemini-2.5-pro"),
                                    ids)
    expected = read_json("gemini", "request__function_response_with_thought_signature_replay.json")
    assert built.body == expected
    assert built.dropped == []
    sent = built.body["contents"][1]["parts"][0]["thoughtSignature"]
    stored = (answer.metadata.provider_raw or {})["thought_signatures"]["tool_use"][answer.tool_uses()[0].id]
    assert sent != stored and sent == stored.replace("+", "-").replace("/", "_")  # same bytes, SDK alphabet


def test_streamed_signature_replays_on_the_call_part_as_the_recorded_follow_up_did() -> None:
    ids = ToolIdMap()
    model = "gemini:gemini-3-pro-preview"
    answer = _answer("stream__function_call_thought_signature.sse", model, ids)
    history = [user_message("What is the capital of the user country? Call the tool"), answer,
               tool_result_message(answer.tool_uses()[0].id, '{"return_value": "Mexico"}')]
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model=model), ids).body
    recorded = read_json("gemini", "request__stream_function_response_after_signature.json")["contents"]
    for turn in recorded:  # pydantic-ai added its own ids; Gemini issued none, so we send none
        for part in turn["parts"]:
            for key in ("functionCall", "functionResponse"):
                if key in part:
                    part[key].pop("id")
    assert body["contents"] == recorded


def test_signature_is_dropped_with_a_warning_for_another_model(caplog: pytest.LogCaptureFixture) -> None:
    lossy.forget_logged_drops()
    history, tools, ids = _first_turn()
    answer = _answer("response__function_call_thought_signature.json", "gemini:gemini-2.5-pro", ids)
    result = tool_result_message(answer.tool_uses()[0].id, "1073")
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        built = GeminiAdapter().to_wire([*history, answer, result], tools,
                                        AdapterOptions(model="gemini:gemini-2.5-flash", session_id="sess_g"), ids)
    call_part = built.body["contents"][1]["parts"][0]
    assert "thoughtSignature" not in call_part and call_part["functionCall"]["name"] == "multiply"
    [drop] = built.dropped
    assert (drop.block_type, drop.block_index, drop.adapter, drop.message_id) == (
        "thought_signature", 0, "gemini/generate_content", answer.id)
    [record] = [r for r in caplog.records if r.name == "metis_core.adapters.lossy"]
    assert record.levelno == logging.WARNING
    assert (record.session_id, record.message_id, record.block_type, record.adapter) == (  # type: ignore[attr-defined]
        "sess_g", answer.id, "thought_signature", "gemini/generate_content")
    assert "gemini/generate_content/gemini-2.5-pro" in record.reason  # type: ignore[attr-defined]


def test_dropping_is_a_log_line_not_a_bus_event() -> None:
    import metis_core.adapters._common.lossy as lossy_module
    import metis_core.adapters.gemini.request as request_module

    for module in (lossy_module, request_module):
        assert "metis_core.events" not in inspect.getsource(module)


def test_parallel_call_signature_goes_back_on_the_first_call_only_with_responses_merged_in_call_order() -> None:
    ids = ToolIdMap()
    model = "gemini:gemini-3-flash-preview"
    answer = _answer("response__parallel_function_calls.json", model, ids)
    uses = answer.tool_uses()
    results = [tool_result_message(u.id, f'{{"return_value": "{topic}"}}')
               for u, topic in zip(uses, ["cars", "penguins", "cars"], strict=True)]
    history = [user_message("jokes"), answer, results[2], results[0], results[1]]  # stored out of order
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model=model), ids).body
    model_turn, responses = body["contents"][1], body["contents"][2]
    assert ["thoughtSignature" in p for p in model_turn["parts"]] == [True, False, False]
    assert model_turn["parts"][0]["thoughtSignature"] == read_json(
        "gemini", "request__parallel_function_responses.json")["contents"][1]["parts"][0]["thoughtSignature"]
    assert responses["role"] == "user" and len(body["contents"]) == 3
    assert [p["functionResponse"]["response"]["return_value"] for p in responses["parts"]] == [
        "cars", "penguins", "cars"]
    assert {p["functionResponse"]["name"] for p in responses["parts"]} == {"generate_topic"}
    validate_with_sdk(body)


def _assistant(*blocks: Any, model: str = "anthropic:claude-sonnet-4-5", raw: dict[str, Any] | None = None) -> Message:
    from metis_core.adapters.base import DIRECT_ROUTING
    from metis_core.messages import Usage

    return Message(role=Role.ASSISTANT, content=list(blocks), metadata=MessageMetadata(
        model=model, provider=model.partition(":")[0], routing=DIRECT_ROUTING, usage=Usage(), provider_raw=raw))


def test_gemini_3_gets_the_documented_stand_in_signature_on_a_foreign_turns_first_call_only() -> None:
    calls = [ToolUseBlock(id=f"tu_{i}", name="lookup", input={"q": str(i)}) for i in range(2)]
    history = [user_message("look up two things"), _assistant(*calls),
               tool_result_message("tu_0", "a"), tool_result_message("tu_1", "b")]
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-3-pro-preview")).body
    parts = body["contents"][1]["parts"]
    assert [p.get("thoughtSignature") for p in parts] == [GEMINI_3_SKIP_SIGNATURE, None]
    validate_with_sdk(body)
    older = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-pro")).body
    assert all("thoughtSignature" not in p for p in older["contents"][1]["parts"])


def test_thinking_blocks_replay_only_to_their_origin() -> None:
    lossy.forget_logged_drops()
    origin = BlockOrigin(provider="gemini", api="generate_content", model="gemini-2.5-pro")
    history = [user_message("q"),
               _assistant(ThinkingBlock(text="plan", signature="a+b/", origin=origin), TextBlock(text="answer"),
                          model="gemini:gemini-2.5-pro"),
               user_message("again")]
    same = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-pro"))
    assert same.body["contents"][1]["parts"][0] == {"text": "plan", "thought": True, "thoughtSignature": "a-b_"}
    other = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-flash"))
    assert other.body["contents"][1]["parts"] == [{"text": "answer"}]
    assert [d.block_type for d in other.dropped] == ["thinking"]
    anthropic = BlockOrigin(provider="anthropic", api="messages", model="claude-sonnet-4-5")
    foreign = [user_message("q"), _assistant(RedactedThinkingBlock(data="x", origin=anthropic),
                                             TextBlock(text="hi")), user_message("more")]
    dropped = GeminiAdapter().to_wire(foreign, [], AdapterOptions(model="gemini:gemini-2.5-pro")).dropped
    assert [d.block_type for d in dropped] == ["redacted_thinking"]


def test_a_trailing_empty_text_signature_goes_back_as_an_empty_signed_part() -> None:
    origin = {"provider": "gemini", "api": "generate_content", "model": "gemini-2.5-pro"}
    raw = {"thought_signatures": {"origin": origin, "tool_use": {}, "text": {}, "trailing": "eHl6"}}
    history = [user_message("q"), _assistant(TextBlock(text="hi"), model="gemini:gemini-2.5-pro", raw=raw),
               user_message("next")]
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-pro")).body
    assert body["contents"][1]["parts"] == [{"text": "hi"}, {"text": "", "thoughtSignature": "eHl6"}]


# --- turn structure ----------------------------------------------------------------------------


def test_system_messages_are_hoisted_in_order_into_system_instruction() -> None:
    history = [system_message("first"), user_message("q"), system_message("second")]
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-pro")).body
    assert body["systemInstruction"] == {"parts": [{"text": "first"}, {"text": "second"}], "role": "user"}
    assert body["contents"] == [{"parts": [{"text": "q"}], "role": "user"}]


def test_a_history_opening_with_a_model_turn_gets_an_empty_user_turn_first() -> None:
    history = [_assistant(ToolUseBlock(id="tu_1", name="f", input={})), tool_result_message("tu_1", "ok")]
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-pro")).body
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][0]["parts"] == [{"text": ""}]
    validate_with_sdk(body)


def test_consecutive_model_turns_merge_so_calls_follow_a_user_turn() -> None:
    history = [user_message("q"), _assistant(TextBlock(text="let me check")),
               _assistant(ToolUseBlock(id="tu_1", name="f", input={"a": 1})), tool_result_message("tu_1", "done"),
               user_message("thanks")]
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-pro")).body
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][1]["parts"] == [{"text": "let me check"}, {"functionCall": {"args": {"a": 1}, "name": "f"}}]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "f", "response": {"output": "done"}}}, {"text": "thanks"}]


def test_tool_results_take_the_name_of_the_call_they_answer_and_errors_use_the_error_key() -> None:
    history = [user_message("q"), _assistant(ToolUseBlock(id="tu_1", name="read_file", input={"p": "x"})),
               tool_result_message("tu_1", "no such file", is_error=True)]
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-pro")).body
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}}]


def test_an_unanswered_call_gets_an_error_response_so_pairing_holds() -> None:
    history = [user_message("q"), _assistant(ToolUseBlock(id="tu_1", name="f", input={})), user_message("hello?")]
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-pro")).body
    responses = [p for p in body["contents"][2]["parts"] if "functionResponse" in p]
    assert len(responses) == 1 and "error" in responses[0]["functionResponse"]["response"]


def test_tool_ids_are_sent_only_for_calls_that_arrived_with_one() -> None:
    ids = ToolIdMap()
    issued = ids.canonical_for("gemini", "fc_7")
    history = [user_message("q"), _assistant(ToolUseBlock(id=issued, name="f", input={}),
                                             ToolUseBlock(id="tu_other", name="g", input={})),
               tool_result_message(issued, "1"), tool_result_message("tu_other", "2")]
    body = GeminiAdapter().to_wire(history, [], AdapterOptions(model="gemini:gemini-2.5-pro"), ids).body
    calls = [p["functionCall"] for p in body["contents"][1]["parts"]]
    responses = [p["functionResponse"] for p in body["contents"][2]["parts"]]
    assert [c.get("id") for c in calls] == ["fc_7", None]
    assert [r.get("id") for r in responses] == ["fc_7", None]
    assert ids.provider_id("gemini", "tu_other") is None  # nothing minted


# --- images --------------------------------------------------------------------------------------


def _image(kind: str, data: str) -> ImageBlock:
    return ImageBlock(source=ImageSource(kind=kind, data=data), media_type="image/png")  # type: ignore[arg-type]


class _Registry:
    def __init__(self, caps: AdapterCapabilities) -> None:
        self.caps = caps

    def capabilities(self, model: str) -> AdapterCapabilities:
        return self.caps


def test_images_go_as_inline_data_or_file_data_and_file_refs_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    lossy.forget_logged_drops()
    message = Message(role=Role.USER, content=[TextBlock(text="see"), _image("base64", "iVBOR/v//g=="),
                                               _image("url", "https://example.com/a.png"),
                                               _image("file_ref", "shots/a.png")])
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        built = GeminiAdapter().to_wire([message], [], AdapterOptions(model="gemini:gemini-2.5-pro"))
    assert built.body["contents"][0]["parts"][1:] == [
        {"inlineData": {"data": "iVBOR_v__g==", "mimeType": "image/png"}},
        {"fileData": {"fileUri": "https://example.com/a.png", "mimeType": "image/png"}}]
    assert [(d.block_type, d.block_index) for d in built.dropped] == [("image", 3)]
    assert "file_ref" in caplog.text
    validate_with_sdk(built.body)


def test_images_to_a_model_without_image_input_are_dropped() -> None:
    lossy.forget_logged_drops()
    adapter = GeminiAdapter(registry=_Registry(AdapterCapabilities(supports_images=False)))  # type: ignore[arg-type]
    message = Message(role=Role.USER, content=[TextBlock(text="see"), _image("base64", "iVBO")])
    built = adapter.to_wire([message], [], AdapterOptions(model="gemini:gemini-2.0-flash"))
    assert built.body["contents"][0]["parts"] == [{"text": "see"}]
    assert [d.block_type for d in built.dropped] == ["image"]


# --- tools and options ---------------------------------------------------------------------------


def test_tool_schemas_are_converted_to_gemini_dialect_and_unsupported_keywords_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tool = ToolDefinition(name="search_v2", description="Search.", input_schema={
        "type": "object", "additionalProperties": False, "required": ["q"],
        "properties": {"q": {"type": "string", "minLength": 1},
                       "limit": {"type": ["integer", "null"], "minimum": 1},
                       "kind": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]},
                       "tags": {"type": "array", "items": {"type": "string"}}}})
    empty = ToolDefinition(name="now", description="Current time.", input_schema={"type": "object", "properties": {}})
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.gemini"):
        body = GeminiAdapter().to_wire([user_message("q")], [tool, empty],
                                       AdapterOptions(model="gemini:gemini-2.5-pro")).body
    declarations = body["tools"][0]["functionDeclarations"]
    assert declarations[0]["parameters"] == {
        "type": "OBJECT", "required": ["q"],
        "properties": {"q": {"type": "STRING", "minLength": 1},
                       "limit": {"type": "INTEGER", "nullable": True, "minimum": 1},
                       "kind": {"anyOf": [{"type": "STRING", "enum": ["a", "b"]}, {"type": "NULL"}]},
                       "tags": {"type": "ARRAY", "items": {"type": "STRING"}}}}
    assert declarations[1] == {"description": "Current time.", "name": "now"}  # no empty OBJECT
    assert "additionalProperties" in caplog.text and "search_v2" in caplog.text
    validate_with_sdk(body)
    read = read_request(body, model="gemini:gemini-2.5-pro")
    assert read.tools[0].input_schema["properties"]["limit"]["type"] == ["integer", "null"]


@pytest.mark.parametrize(
    ("choice", "config"),
    [("auto", {"mode": "AUTO"}), ("none", {"mode": "NONE"}), ("required", {"mode": "ANY"}),
     ({"name": "f"}, {"mode": "ANY", "allowedFunctionNames": ["f"]})],
)
def test_tool_choice_maps_to_function_calling_config(choice: Any, config: dict[str, Any]) -> None:
    tool = ToolDefinition(name="f", description="F.", input_schema={"type": "object", "properties": {}})
    body = GeminiAdapter().to_wire([user_message("q")], [tool],
                                   AdapterOptions(model="gemini:gemini-2.5-pro", tool_choice=choice)).body
    assert body["toolConfig"] == {"functionCallingConfig": config}
    validate_with_sdk(body)
    assert read_request(body, model="gemini:gemini-2.5-pro").options.tool_choice == choice


def test_options_map_to_generation_config_and_read_back() -> None:
    options = AdapterOptions(model="gemini:gemini-2.5-pro", max_tokens=512, temperature=0.2, top_p=0.9,
                             stop=["END"], thinking_budget_tokens=1024,
                             response_format={"name": "answer", "schema": {"type": "object", "properties": {
                                 "x": {"type": "string"}}, "required": ["x"], "additionalProperties": False}},
                             extra={"safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT",
                                                        "threshold": "BLOCK_NONE"}],
                                    "generationConfig": {"seed": 7}})
    body = GeminiAdapter().to_wire([user_message("q")], [], options).body
    assert body["generationConfig"] == {
        "maxOutputTokens": 512, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"],
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024}, "responseMimeType": "application/json",
        "responseJsonSchema": options.response_format["schema"], "seed": 7}  # type: ignore[index]
    assert body["safetySettings"][0]["threshold"] == "BLOCK_NONE"
    types_body = {k: v for k, v in body.items() if k != "safetySettings"}
    validate_with_sdk(types_body)
    back = read_request(body, model="gemini:gemini-2.5-pro").options
    assert (back.max_tokens, back.temperature, back.top_p, back.stop, back.thinking_budget_tokens) == (
        512, 0.2, 0.9, ["END"], 1024)
    assert back.response_format == {"name": "response", "schema": options.response_format["schema"]}  # type: ignore[index]
    assert back.extra == {"generationConfig": {"seed": 7}, "safetySettings": body["safetySettings"]}


def test_reasoning_effort_is_a_thinking_level_on_gemini_3_and_a_budget_before() -> None:
    three = GeminiAdapter().to_wire([user_message("q")], [], AdapterOptions(
        model="gemini:gemini-3-pro-preview", reasoning_effort="high")).body
    assert three["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingLevel": "HIGH"}
    two = GeminiAdapter().to_wire([user_message("q")], [], AdapterOptions(
        model="gemini:gemini-2.5-flash", reasoning_effort="low")).body
    assert two["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 2048}
    validate_with_sdk(three)
    validate_with_sdk(two)


def test_streaming_requests_use_stream_generate_content_with_alt_sse_and_the_key_only_in_a_header() -> None:
    adapter = GeminiAdapter()
    built = adapter.to_wire([user_message("q")], [], AdapterOptions(model="gemini:gemini-2.5-pro", stream=True))
    assert (built.path, built.query, built.stream) == (
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent", {"alt": "sse"}, True)
    plain = adapter.to_wire([user_message("q")], [], AdapterOptions(model="gemini:gemini-2.5-pro"))
    assert (plain.path, plain.query) == ("/v1beta/models/gemini-2.5-pro:generateContent", {})
    assert adapter.auth_headers("AIza-SECRET") == {"x-goog-api-key": "AIza-SECRET"}
    assert adapter.auth_headers(None) == {}
    assert "SECRET" not in repr(built) and "SECRET" not in repr(plain)


# --- reader edge cases ---------------------------------------------------------------------------


def test_reader_rejects_a_function_response_that_answers_no_call() -> None:
    body = {"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]}
    with pytest.raises(InvalidRequestError, match="answers no earlier functionCall"):
        read_request(body, model="gemini:gemini-2.5-pro")


def test_reader_rejects_a_body_without_contents() -> None:
    with pytest.raises(InvalidRequestError, match="contents list"):
        read_request({"prompt": "hi"}, model="gemini:gemini-2.5-pro")


def test_reader_pairs_responses_by_id_before_name() -> None:
    body = {"contents": [
        {"role": "user", "parts": [{"text": "q"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "a", "name": "f", "args": {}}},
                                    {"functionCall": {"id": "b", "name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "b", "name": "f", "response": {"output": "B"}}},
                                   {"functionResponse": {"id": "a", "name": "f", "response": {"output": "A"}}}]}]}
    ids = ToolIdMap()
    messages = read_request(body, model="gemini:gemini-2.5-pro", tool_ids=ids).messages
    answers = {m.tool_results()[0].tool_use_id: m.tool_results()[0].text() for m in messages if m.role is Role.TOOL}
    assert answers == {ids.lookup_canonical("gemini", "a"): "A", ids.lookup_canonical("gemini", "b"): "B"}
