"""Canonical -> Responses API requests: every recorded request round-trips, and the stateless rules hold."""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest
from adapters.openai_responses.responses_oracle import PROVIDER, validate_with_sdk, without_item_state
from fixture_files import fidelity_tier, plain_wire_files, read_json

from metis_core.adapters._common import lossy
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.adapters.openai_responses.request_reader import read_request
from metis_core.errors import UnreadableWireRequestError
from metis_core.messages import (
    BlockOrigin,
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
    MessageStatus,
    RedactedThinkingBlock,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolUseBlock,
    Usage,
    system_message,
    tool_result_message,
    user_message,
)
from metis_core.models.capabilities import AdapterCapabilities

MODEL = "openai_responses:gpt-5"
ORIGIN = BlockOrigin(provider=PROVIDER, api="responses", model="gpt-5")
REQUESTS = [p for p in plain_wire_files(PROVIDER) if p.name.startswith(("request__", "docs_example__request"))]


def assistant(
    *blocks: Any,
    status: MessageStatus = MessageStatus.COMPLETE,
    raw: dict[str, Any] | None = None,
    message_id: str | None = None,
) -> Message:
    metadata = MessageMetadata(
        model=MODEL,
        provider=PROVIDER,
        usage=Usage(),
        status=status,
        provider_raw=raw,
        routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=MODEL, reason="test"),
    )
    extra = {"id": message_id} if message_id else {}
    return Message(role=Role.ASSISTANT, session_id="sess_r", content=list(blocks), metadata=metadata, **extra)


def build(
    messages: list[Message],
    *,
    model: str = MODEL,
    tools: list[ToolDefinition] | None = None,
    ids: ToolIdMap | None = None,
    **options: Any,
) -> Any:
    return OpenAIResponsesAdapter().to_wire(
        messages,
        tools or [],
        AdapterOptions(model=model, session_id="sess_r", **options),
        ids if ids is not None else ToolIdMap(),
    )


# --- every recorded request: read, rebuild, compare ----------------------------------------------


def expected_rebuild(original: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The original with each legitimate difference applied, and the names of those applied.

    - item ids/status: metis never sends them (they point at server state; store:false rejects them);
    - tool `strict`: always explicit (the SDK marks it Required), true exactly for strict-ready schemas;
    - tool `description: null` is the same as no description;
    - `input_image.detail`: the SDK marks it Required; metis sends the API default "auto".
    """
    expected, removed = without_item_state(original)
    applied = set(removed)
    for tool in expected.get("tools") or ():
        if "strict" not in tool:
            tool["strict"] = False
            applied.add("tool.strict made explicit")
        if "description" in tool and tool["description"] is None:
            del tool["description"]
            applied.add("tool.description null")
    for item in expected["input"] if isinstance(expected.get("input"), list) else ():
        for part in item.get("content") if isinstance(item.get("content"), list) else ():
            if part.get("type") == "input_image" and "detail" not in part:
                part["detail"] = "auto"
                applied.add("input_image.detail default")
    return expected, applied


@pytest.mark.parametrize("path", REQUESTS, ids=lambda p: p.name)
def test_every_recorded_request_reads_to_canonical_and_rebuilds_to_the_same_body(path: Path) -> None:
    original = read_json(PROVIDER, path.name)
    ids = ToolIdMap()
    parsed = read_request(copy.deepcopy(original), tool_ids=ids, session_id="sess_r")
    built = OpenAIResponsesAdapter().to_wire(parsed.messages, parsed.tools, parsed.options, ids)
    expected, applied = expected_rebuild(original)
    assert built.body == expected
    assert built.dropped == []
    if fidelity_tier(PROVIDER, path.name) == "LIVE-VERBATIM":
        # exact dict equality except what store:false and the SDK's Required fields demand
        assert applied <= {"function_call.id", "function_call.status", "tool.strict made explicit"}
    validate_with_sdk(built.body)


def test_agents_sdk_request_reads_into_a_tool_round_trip_and_drops_only_the_item_state() -> None:
    original = read_json(PROVIDER, "request__function_call_output_agents_sdk.json")
    ids = ToolIdMap()
    parsed = read_request(original, tool_ids=ids)
    assert [m.role for m in parsed.messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL]
    call = parsed.messages[2].content[0]
    assert isinstance(call, ToolUseBlock) and call.name == "add" and call.input == {"a": 1, "b": 2}
    assert parsed.messages[3].tool_results()[0].tool_use_id == call.id
    assert ids.lookup_canonical(PROVIDER, "call_xHztRD2un5qUnUzaZ2Dw5xAh") == call.id
    built = OpenAIResponsesAdapter().to_wire(parsed.messages, parsed.tools, parsed.options, ids).body
    assert built["instructions"] == "You are a helpful assistant specialized in addition calculations."
    assert without_item_state(original)[1] == ["function_call.id", "function_call.status"]
    assert "id" not in built["input"][1] and "status" not in built["input"][1]


def test_reasoning_replay_request_reads_summary_parts_and_encrypted_content_and_replays_them_verbatim() -> None:
    original = read_json(PROVIDER, "request__reasoning_replay_with_function_call_output.json")
    parsed = read_request(original)
    thinking = parsed.messages[2].thinking()[0]
    source = original["input"][1]
    assert thinking.signature == source["encrypted_content"]
    assert thinking.origin == ORIGIN
    assert thinking.text.startswith("**Creating a structured poem**")
    assert len(source["summary"]) == 5 and thinking.text.count("\n\n**") == 4  # parts joined by a blank line
    built = OpenAIResponsesAdapter().to_wire(parsed.messages, parsed.tools, parsed.options).body
    replayed = built["input"][1]
    assert replayed == {
        "type": "reasoning",
        "summary": source["summary"],
        "encrypted_content": source["encrypted_content"],
    }
    assert built["input"][2]["type"] == "function_call"  # still followed by the item it produced


def test_multiturn_system_input_item_stays_an_input_item_and_instructions_stay_instructions() -> None:
    multiturn = read_request(read_json(PROVIDER, "request__multiturn_input_with_system_role.json"))
    assert multiturn.messages[0].role is Role.SYSTEM
    built = OpenAIResponsesAdapter().to_wire(multiturn.messages, [], multiturn.options).body
    assert built["input"][0] == {"role": "system", "content": "You are a helpful assistant."}
    assert "instructions" not in built


# --- system placement --------------------------------------------------------------------------


def test_leading_system_messages_are_hoisted_into_instructions_in_order() -> None:
    body = build([system_message("Be brief."), system_message("Answer in French."), user_message("hi")]).body
    assert body["instructions"] == "Be brief.\n\nAnswer in French."
    assert body["input"] == "hi"


def test_a_system_message_after_the_conversation_started_stays_in_place_as_a_system_item() -> None:
    body = build(
        [user_message("hi"), assistant(TextBlock(text="hello")), system_message("Now be terse."), user_message("again")]
    ).body
    assert "instructions" not in body
    assert [item.get("role") for item in body["input"]] == ["user", "assistant", "system", "user"]
    assert body["input"][2] == {"role": "system", "content": "Now be terse."}


# --- reasoning replay --------------------------------------------------------------------------


def conversation_with_reasoning(origin: BlockOrigin | None, signature: str | None = "gAAAA-enc") -> list[Message]:
    use = ToolUseBlock(id="tu_01JREASONCALL000000000000", name="lookup", input={"q": "x"})
    return [
        user_message("find x", session_id="sess_r"),
        assistant(
            ThinkingBlock(text="I should look it up", signature=signature, origin=origin),
            use,
            message_id="msg_reasoning",
        ),
        tool_result_message(use.id, "found", session_id="sess_r"),
    ]


def test_reasoning_replays_verbatim_to_the_same_origin_without_any_id() -> None:
    request = build(conversation_with_reasoning(ORIGIN))
    item = request.body["input"][1]
    assert item == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "I should look it up"}],
        "encrypted_content": "gAAAA-enc",
    }
    assert request.body["input"][2]["type"] == "function_call"
    assert request.body["include"] == ["reasoning.encrypted_content"]
    assert request.dropped == []
    validate_with_sdk(request.body)


def test_empty_signed_reasoning_is_replayed_with_an_empty_summary() -> None:
    messages = conversation_with_reasoning(ORIGIN)
    messages[1].content[0] = ThinkingBlock(text="", signature="gAAAA-empty", origin=ORIGIN)
    item = build(messages).body["input"][1]
    assert item == {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-empty"}


def test_reasoning_from_another_model_is_dropped_and_logged_with_the_lossy_fields(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lossy.forget_logged_drops()
    other = BlockOrigin(provider=PROVIDER, api="responses", model="gpt-5-mini")
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        request = build(conversation_with_reasoning(other))
    assert [item.get("type") for item in request.body["input"]] == [None, "function_call", "function_call_output"]
    [drop] = request.dropped
    assert (drop.message_id, drop.block_index, drop.block_type, drop.adapter) == (
        "msg_reasoning",
        0,
        "thinking",
        f"{PROVIDER}/responses",
    )
    [record] = [r for r in caplog.records if r.name == "metis_core.adapters.lossy"]
    assert record.levelno == logging.WARNING
    assert (record.session_id, record.message_id, record.block_type, record.adapter) == (  # type: ignore[attr-defined]
        "sess_r",
        "msg_reasoning",
        "thinking",
        f"{PROVIDER}/responses",
    )
    assert "gpt-5-mini" in record.reason and "gpt-5" in record.reason  # type: ignore[attr-defined]


def test_lossy_drops_are_log_lines_only_this_adapter_never_touches_the_event_bus() -> None:
    folder = Path(__file__).resolve().parents[3] / "metis_core" / "adapters" / "openai_responses"
    for source in folder.glob("*.py"):
        assert "metis_core.events" not in source.read_text(encoding="utf-8"), source.name


def test_thinking_from_anthropic_and_unsigned_summaries_and_redacted_blocks_are_all_dropped() -> None:
    lossy.forget_logged_drops()
    anthropic = BlockOrigin(provider="anthropic", api="messages", model="claude-sonnet-4-6")
    messages = conversation_with_reasoning(anthropic, signature="EqQBCkYIBx")
    messages[1].content.insert(0, RedactedThinkingBlock(data="opaque", origin=anthropic))
    messages[1].content.insert(0, ThinkingBlock(text="summary only, no encrypted content"))
    request = build(messages)
    assert all(item.get("type") != "reasoning" for item in request.body["input"])
    assert sorted(d.block_type for d in request.dropped) == ["redacted_thinking", "thinking", "thinking"]
    assert "store:false" in next(d.reason for d in request.dropped if d.block_index == 0)


def test_a_reasoning_item_never_goes_out_without_the_item_that_followed_it() -> None:
    lossy.forget_logged_drops()
    # A cancelled turn: repair removes the unexecuted call, which leaves the reasoning trailing.
    use = ToolUseBlock(id="tu_01JDANGLING0000000000000", name="lookup", input={})
    cut = assistant(
        ThinkingBlock(text="plan", signature="gAAAA-x", origin=ORIGIN),
        use,
        status=MessageStatus.CANCELLED,
        message_id="msg_cut",
    )
    request = build([user_message("go"), cut, user_message("never mind")])
    assert all(item.get("type") != "reasoning" for item in request.body["input"])
    [drop] = request.dropped
    assert drop.message_id == "msg_cut" and "followed" in drop.reason


# --- stateless (store:false) requests --------------------------------------------------------------


def test_store_false_requests_carry_no_previous_response_id_and_no_item_references() -> None:
    messages = conversation_with_reasoning(ORIGIN)
    messages.append(
        assistant(
            TextBlock(text="x is found"), raw={PROVIDER: {"response_id": "resp_123", "reasoning": [{"id": "rs_1"}]}}
        )
    )
    messages.append(user_message("thanks"))
    body = build(messages, extra={"store": False, "previous_response_id": "resp_123"}).body
    assert body["store"] is False
    assert "previous_response_id" not in body and "conversation" not in body
    for item in body["input"]:
        assert "id" not in item and item.get("type") != "item_reference"
    assert "resp_123" not in str(body) and "rs_1" not in str(body)


# --- tool ids, calls and outputs ---------------------------------------------------------------


def test_canonical_tool_ids_become_stable_openai_call_ids_and_issued_ids_come_back_unchanged() -> None:
    ids = ToolIdMap()
    issued = ids.canonical_for(PROVIDER, "call_tjEzTywkXuBUO42ugPFnQYqi")
    fresh = "tu_01JFRESHCALL0000000000000"
    messages = [
        user_message("weather?"),
        assistant(ToolUseBlock(id=issued, name="w", input={}), ToolUseBlock(id=fresh, name="w", input={"a": 1})),
        tool_result_message(issued, "sunny"),
        tool_result_message(fresh, "rainy"),
    ]
    first = build(messages, ids=ids).body["input"]
    again = build(messages, ids=ids).body["input"]
    assert first == again
    assert first[1]["call_id"] == "call_tjEzTywkXuBUO42ugPFnQYqi"
    assert first[2]["call_id"] == "call_01JFRESHCALL0000000000000" and len(first[2]["call_id"]) <= 40
    assert [i["call_id"] for i in first[3:]] == [first[1]["call_id"], first[2]["call_id"]]
    assert first[2]["arguments"] == '{"a":1}'


def test_adjacent_assistant_texts_go_as_one_item_until_a_call_or_a_different_phase_starts_another() -> None:
    call_id = "tu_01JTEXTRUNCALL00000000000"
    raw = {PROVIDER: {"text_parts": {"3": {"phase": "final_answer"}}}}
    messages = [
        user_message("go"),
        assistant(TextBlock(text="a"), TextBlock(text="b"), ToolUseBlock(id=call_id, name="w", input={}),
                  TextBlock(text="c"), TextBlock(text="d"), raw=raw),
        tool_result_message(call_id, "done"),
    ]
    items = build(messages).body["input"]
    assert items[1] == {"role": "assistant", "content": "ab"}
    assert items[2]["type"] == "function_call"
    assert items[3] == {"role": "assistant", "content": "c"}
    assert items[4] == {"type": "message", "role": "assistant", "phase": "final_answer",
                        "content": [{"type": "output_text", "text": "d", "annotations": []}]}
    assert items[5]["type"] == "function_call_output" and items[5]["call_id"] == items[2]["call_id"]


def test_custom_grammar_tool_calls_go_back_as_custom_calls_with_custom_outputs() -> None:
    use = ToolUseBlock(id="tu_01JCUSTOM000000000000000", name="math_exp", input={"input": "4 + 4"})
    messages = [
        user_message("add"),
        assistant(use, raw={PROVIDER: {"custom_tool_calls": [use.id]}}),
        tool_result_message(use.id, "8"),
    ]
    items = build(messages).body["input"]
    assert items[1] == {
        "type": "custom_tool_call",
        "call_id": "call_01JCUSTOM000000000000000",
        "name": "math_exp",
        "input": "4 + 4",
    }
    assert items[2] == {"type": "custom_tool_call_output", "call_id": items[1]["call_id"], "output": "8"}
    validate_with_sdk(build(messages).body)


def test_tool_results_with_images_become_output_part_lists() -> None:
    use = ToolUseBlock(id="tu_01JSHOT0000000000000000", name="screenshot", input={})
    result = tool_result_message(
        use.id,
        [
            TextBlock(text="here"),
            ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgo="), media_type="image/png"),
        ],
    )
    items = build([user_message("shot"), assistant(use), result]).body["input"]
    assert items[2]["output"] == [
        {"type": "input_text", "text": "here"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
    ]


# --- images ------------------------------------------------------------------------------------


def image_message(kind: str, data: str) -> Message:
    return Message(
        role=Role.USER,
        session_id="sess_r",
        id="msg_img",
        content=[
            TextBlock(text="what is this?"),
            ImageBlock(source=ImageSource(kind=kind, data=data), media_type="image/png"),
        ],
    )  # type: ignore[arg-type]


def test_images_are_sent_as_urls_or_data_urls() -> None:
    url = build([image_message("url", "https://example.com/cat.png")]).body["input"][0]["content"][1]
    inline = build([image_message("base64", "AAAA")]).body["input"][0]["content"][1]
    assert url == {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "auto"}
    assert inline["image_url"] == "data:image/png;base64,AAAA"


def test_file_ref_images_and_images_to_a_text_only_model_are_dropped_and_logged() -> None:
    lossy.forget_logged_drops()
    request = build([image_message("file_ref", "shots/a.png")])
    assert request.body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "what is this?"}]}]
    assert request.dropped[0].block_type == "image" and "file_ref" in request.dropped[0].reason

    class TextOnly:
        def knows(self, model: str) -> bool:
            return True

        def capabilities(self, model: str) -> AdapterCapabilities:
            return AdapterCapabilities(supports_images=False)

    adapter = OpenAIResponsesAdapter(TextOnly())  # type: ignore[arg-type]
    blind = adapter.to_wire([image_message("base64", "AAAA")], [], AdapterOptions(model=MODEL))
    assert [d.block_index for d in blind.dropped] == [1] and "does not accept images" in blind.dropped[0].reason


# --- tools and options -------------------------------------------------------------------------


def test_strict_is_on_exactly_for_schemas_that_already_meet_strict_mode() -> None:
    closed = ToolDefinition(
        name="add",
        description="Add",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "required": ["a"],
            "additionalProperties": False,
        },
    )
    open_ = ToolDefinition(
        name="find",
        description="",
        input_schema={
            "type": "object",
            "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["q"],
        },
    )
    tools = build([user_message("x")], tools=[closed, open_]).body["tools"]
    assert tools[0] == {
        "type": "function",
        "name": "add",
        "description": "Add",
        "parameters": closed.input_schema,
        "strict": True,
    }
    assert tools[1]["strict"] is False and "description" not in tools[1]


def test_options_map_to_responses_fields_and_extra_none_switches_a_default_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    with caplog.at_level(logging.WARNING):
        body = build(
            [user_message("x")],
            max_tokens=300,
            temperature=0.2,
            top_p=0.9,
            tool_choice={"name": "add"},
            parallel_tool_calls=False,
            reasoning_effort="high",
            stream=True,
            stop=["END"],
            response_format={"name": "city", "schema": schema},
        ).body
    assert body["max_output_tokens"] == 300 and body["temperature"] == 0.2 and body["top_p"] == 0.9
    assert body["tool_choice"] == {"type": "function", "name": "add"}
    assert body["parallel_tool_calls"] is False
    assert body["reasoning"] == {"effort": "high"} and body["include"] == ["reasoning.encrypted_content"]
    assert body["text"] == {"format": {"type": "json_schema", "name": "city", "schema": schema, "strict": True}}
    assert body["stream"] is True and "stop" not in body
    validate_with_sdk(body)
    off = build([user_message("x")], reasoning_effort="low", extra={"include": None, "store": False}).body
    assert "include" not in off and off["store"] is False


def test_a_thinking_budget_becomes_the_nearest_effort_and_non_reasoning_models_get_no_include() -> None:
    assert build([user_message("x")], thinking_budget_tokens=10_000).body["reasoning"] == {"effort": "medium"}
    assert "include" not in build([user_message("x")], model="openai_responses:gpt-4.1").body


# --- reading requests that metis cannot hold -----------------------------------------------------


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ({"model": "gpt-5", "input": "x", "previous_response_id": "resp_1"}, "previous_response_id"),
        ({"model": "gpt-5", "input": [{"type": "item_reference", "id": "msg_1"}]}, "item_reference"),
        ({"model": "gpt-5", "input": "x", "tools": [{"name": "no_type"}]}, "tools\\[0\\]"),
        (
            {"model": "gpt-5", "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "input_file",
        ),
        (
            {"model": "gpt-5", "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]},
            "arguments",
        ),
        ({"input": "x"}, "model"),
        (["not", "an", "object"], "JSON object"),
    ],
)
def test_requests_metis_cannot_hold_are_refused_with_the_field_named(body: Any, names: str) -> None:
    with pytest.raises(UnreadableWireRequestError, match=names):
        read_request(body)


def test_reader_carries_hosted_tool_definitions_and_hosted_items_and_rebuilds_them() -> None:
    body = {
        "model": "gpt-5",
        "tools": [{"type": "web_search"}, {"type": "file_search", "vector_store_ids": ["vs_1"]}],
        "input": [
            {"role": "user", "content": "news?"},
            {"id": "ws_1", "type": "web_search_call", "status": "completed",
             "action": {"type": "search", "query": "news"}},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Here.", "annotations": [
                    {"type": "url_citation", "url": "https://example.test", "title": "Ex",
                     "start_index": 0, "end_index": 5}
                ]},
            ]},
            {"role": "user", "content": "more"},
        ],
    }
    parsed = read_request(body)
    assert parsed.tools == [] and parsed.options.provider_tools == body["tools"]
    assistant = parsed.messages[1]
    assert [b.type for b in assistant.content] == ["provider_tool_call", "text"]
    rebuilt = OpenAIResponsesAdapter().to_wire(parsed.messages, [], parsed.options, ToolIdMap()).body
    assert rebuilt["tools"] == body["tools"]
    assert rebuilt["input"] == body["input"]


def test_reader_maps_options_and_keeps_unknown_fields_verbatim_in_extra() -> None:
    parsed = read_request(
        {
            "model": "gpt-5",
            "input": "x",
            "max_output_tokens": 10,
            "tool_choice": {"type": "function", "name": "f"},
            "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}},
            "reasoning": {"effort": "minimal"},
            "truncation": "auto",
            "metadata": {"k": "v"},
        }
    )
    options = parsed.options
    assert options.model == MODEL and options.max_tokens == 10 and options.tool_choice == {"name": "f"}
    assert options.response_format == {"name": "out", "schema": {"type": "object"}}
    assert options.reasoning_effort == "minimal" and "reasoning" not in options.extra
    assert options.extra == {"include": None, "truncation": "auto", "metadata": {"k": "v"}}


def test_a_read_call_to_a_tool_found_by_tool_search_goes_back_with_its_namespace() -> None:
    call = {"type": "function_call", "call_id": "call_1", "name": "get_weather", "namespace": "get_weather",
            "arguments": '{"location":"Paris"}'}
    body = {"model": "gpt-5-mini", "input": [{"role": "user", "content": "go"}, call,
                                              {"type": "function_call_output", "call_id": "call_1", "output": "9C"}]}
    ids = ToolIdMap()
    parsed = read_request(body, tool_ids=ids)
    built = OpenAIResponsesAdapter().to_wire(parsed.messages, parsed.tools, parsed.options, ids).body
    assert [i for i in built["input"] if i.get("type") == "function_call"] == [call]
