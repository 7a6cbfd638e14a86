"""to_wire for Ollama: roles, content strings, images, tool calls, thinking replay and options."""

from __future__ import annotations

import logging
from typing import Any

import jsonschema
import orjson
import pytest
from adapters.ollama.ollama_wire_schema import CHAT_REQUEST
from fixture_files import read_bytes

from metis_core.adapters._common import lossy
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.ollama.adapter import OllamaAdapter
from metis_core.adapters.ollama.request_reader import read_chat_request
from metis_core.messages import (
    BlockOrigin,
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
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
from metis_core.transport.wire import WireResponse

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
QWEN = BlockOrigin(provider="ollama", api="ollama_chat", model="qwen3:8b")


def assistant(*blocks: Any, model: str = "ollama:qwen3:8b") -> Message:
    return Message(
        role=Role.ASSISTANT,
        content=list(blocks),
        metadata=MessageMetadata(
            model=model,
            provider=model.partition(":")[0],
            routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=model, reason="test"),
            usage=Usage(),
        ),
    )


def wire(messages: list[Message], model: str = "ollama:qwen3:8b", **options: Any) -> dict[str, Any]:
    body = OllamaAdapter().to_wire(messages, options.pop("tools", []), AdapterOptions(model=model, **options)).body
    jsonschema.validate(body, CHAT_REQUEST)
    return body


WEATHER = ToolDefinition(
    name="get_weather",
    description="Get the weather in a given city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def tool_conversation() -> list[Message]:
    call = ToolUseBlock(id="tu_01J0000000000000000000000A", name="get_weather", input={"city": "Tokyo"})
    return [
        system_message("You are terse."),
        user_message("weather in tokyo?"),
        assistant(TextBlock(text="Checking."), call),
        tool_result_message(call.id, "11 degrees celsius"),
    ]


def test_model_id_is_split_on_the_first_colon_only() -> None:
    assert wire([user_message("hi")], model="ollama:qwen3:8b")["model"] == "qwen3:8b"
    assert OllamaAdapter().to_wire([], [], AdapterOptions(model="ollama:qwen3:8b")).path == "/api/chat"


def test_stream_is_always_written_because_ollama_defaults_to_streaming() -> None:
    assert wire([user_message("hi")])["stream"] is False
    assert wire([user_message("hi")], stream=True)["stream"] is True


def test_tool_conversation_maps_roles_calls_and_named_results() -> None:
    body = wire(tool_conversation(), tools=[WEATHER])
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "weather in tokyo?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [{"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Tokyo"}}}],
        },
        {"role": "tool", "content": "11 degrees celsius", "tool_name": "get_weather"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the weather in a given city",
                "parameters": WEATHER.input_schema,
            },
        }
    ]


def test_replaying_the_same_history_gives_the_same_request() -> None:
    history = tool_conversation()
    assert wire(history, tools=[WEATHER]) == wire(history, tools=[WEATHER])


def test_text_blocks_are_joined_into_one_content_string() -> None:
    message = Message(role=Role.USER, content=[TextBlock(text="line one"), TextBlock(text="line two")])
    assert wire([message])["messages"][0]["content"] == "line one\nline two"


def test_options_map_to_ollama_names() -> None:
    body = wire(
        [user_message("hi")],
        max_tokens=128,
        temperature=0.3,
        top_p=0.9,
        stop=["END"],
        response_format={"name": "answer", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        extra={"keep_alive": "10m", "options": {"num_ctx": 16384}},
    )
    assert body["options"] == {"temperature": 0.3, "top_p": 0.9, "num_predict": 128, "stop": ["END"], "num_ctx": 16384}
    assert body["format"] == {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert body["keep_alive"] == "10m"
    assert "think" not in body and "options" not in wire([user_message("hi")])


def test_response_format_without_schema_asks_for_plain_json() -> None:
    assert wire([user_message("hi")], response_format={"name": "json"})["format"] == "json"


@pytest.mark.parametrize(
    ("model", "effort", "expected"),
    [
        ("ollama:qwen3:8b", "high", True),
        ("ollama:deepseek-r1", "minimal", True),
        ("ollama:gpt-oss:20b", "high", "high"),
        ("ollama:gpt-oss:20b", "minimal", "low"),
    ],
)
def test_reasoning_effort_becomes_think_as_a_level_only_for_gpt_oss(model: str, effort: str, expected: Any) -> None:
    assert wire([user_message("hi")], model=model, reasoning_effort=effort)["think"] == expected


def test_a_thinking_budget_alone_turns_thinking_on() -> None:
    assert wire([user_message("hi")], thinking_budget_tokens=2048)["think"] is True


def test_tool_choice_none_sends_no_tools_and_required_is_offered_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert "tools" not in wire([user_message("hi")], tools=[WEATHER], tool_choice="none")
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.ollama"):
        body = wire([user_message("hi")], tools=[WEATHER], tool_choice={"name": "get_weather"})
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert "cannot force a tool call" in caplog.text


# --- thinking replay ---------------------------------------------------------------------------


def test_thinking_from_the_same_ollama_model_is_sent_back_as_message_thinking() -> None:
    body = wire([user_message("2+2?"), assistant(ThinkingBlock(text="add them", origin=QWEN), TextBlock(text="4"))])
    assert body["messages"][1] == {"role": "assistant", "content": "4", "thinking": "add them"}


@pytest.mark.parametrize(
    "origin",
    [
        BlockOrigin(provider="ollama", api="ollama_chat", model="llama3.2"),
        BlockOrigin(provider="anthropic", api="messages", model="claude-sonnet-4-6"),
        None,
    ],
)
def test_thinking_from_any_other_origin_is_dropped_and_logged(
    origin: BlockOrigin | None, caplog: pytest.LogCaptureFixture
) -> None:
    lossy.forget_logged_drops()
    message = assistant(ThinkingBlock(text="secret plan", signature="sig", origin=origin), TextBlock(text="4"))
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        request = OllamaAdapter().to_wire(
            [user_message("2+2?"), message], [], AdapterOptions(model="ollama:qwen3:8b", session_id="sess_t")
        )
    assert request.body["messages"][1] == {"role": "assistant", "content": "4"}
    assert "secret plan" not in str(request.body)
    [drop] = request.dropped
    expected = ("thinking", "ollama/ollama_chat", message.id, 0)
    assert (drop.block_type, drop.adapter, drop.message_id, drop.block_index) == expected
    [record] = [r for r in caplog.records if r.name == "metis_core.adapters.lossy"]
    assert record.levelno == logging.WARNING
    assert (record.session_id, record.message_id, record.block_type, record.adapter) == (  # type: ignore[attr-defined]
        "sess_t",
        message.id,
        "thinking",
        "ollama/ollama_chat",
    )
    assert record.reason  # type: ignore[attr-defined]


def test_redacted_thinking_is_always_dropped() -> None:
    lossy.forget_logged_drops()
    message = assistant(RedactedThinkingBlock(data="opaque", origin=QWEN), TextBlock(text="ok"))
    request = OllamaAdapter().to_wire([user_message("q"), message], [], AdapterOptions(model="ollama:qwen3:8b"))
    assert request.body["messages"][1] == {"role": "assistant", "content": "ok"}
    assert [d.block_type for d in request.dropped] == ["redacted_thinking"]


def test_an_assistant_turn_left_empty_by_drops_is_not_sent() -> None:
    lossy.forget_logged_drops()
    other = BlockOrigin(provider="anthropic", api="messages", model="claude-sonnet-4-6")
    history = [user_message("q"), assistant(ThinkingBlock(text="x", signature="s", origin=other)), user_message("q2")]
    assert [m["role"] for m in wire(history)["messages"]] == ["user", "user"]


def test_dropping_is_a_log_line_not_a_bus_event() -> None:
    import inspect

    import metis_core.adapters._common.lossy as lossy_module
    import metis_core.adapters.ollama.request as request_module

    for module in (lossy_module, request_module):
        assert "metis_core.events" not in inspect.getsource(module)
        assert not any(getattr(v, "__module__", "").startswith("metis_core.events") for v in vars(module).values())


# --- images ------------------------------------------------------------------------------------


def image(kind: str, data: str, media_type: str = "image/png") -> ImageBlock:
    return ImageBlock(source=ImageSource(kind=kind, data=data), media_type=media_type)  # type: ignore[arg-type]


def test_base64_images_go_as_bare_strings_in_message_images() -> None:
    message = Message(role=Role.USER, content=[TextBlock(text="what is this?"), image("base64", PNG)])
    body = wire([message], model="ollama:llava")
    assert body["messages"][0] == {"role": "user", "content": "what is this?", "images": [PNG]}


def test_a_data_url_prefix_is_stripped_to_the_base64_payload() -> None:
    message = Message(role=Role.USER, content=[image("base64", "data:image/png;base64," + PNG)])
    assert wire([message], model="ollama:llava")["messages"][0]["images"] == [PNG]


@pytest.mark.parametrize(
    ("block", "model", "reason"),
    [
        (image("url", "https://example.com/cat.png"), "ollama:llava", "only inline base64"),
        (image("file_ref", "pics/cat.png"), "ollama:llava", "file_ref"),
        (image("base64", PNG), "ollama:llama3.2", "does not accept images"),
        (image("base64", "UklGRg==", "image/webp"), "ollama:llava", "image/webp is not one of"),
    ],
)
def test_images_ollama_cannot_take_are_dropped_with_a_reason(block: ImageBlock, model: str, reason: str) -> None:
    lossy.forget_logged_drops()
    message = Message(role=Role.USER, content=[TextBlock(text="look"), block])
    request = OllamaAdapter().to_wire([message], [], AdapterOptions(model=model))
    assert request.body["messages"][0] == {"role": "user", "content": "look"}
    [drop] = request.dropped
    assert drop.block_type == "image" and reason in drop.reason and drop.block_index == 1


def test_images_in_tool_results_ride_on_the_tool_message() -> None:
    call = ToolUseBlock(id="tu_01J0000000000000000000000B", name="screenshot", input={})
    result = tool_result_message(call.id, [TextBlock(text="done"), image("base64", PNG)])
    body = wire([user_message("shoot"), assistant(call), result], model="ollama:llava")
    assert body["messages"][2] == {"role": "tool", "content": "done", "tool_name": "screenshot", "images": [PNG]}


def test_an_unanswered_call_gets_the_repair_result_before_sending() -> None:
    call = ToolUseBlock(id="tu_01J0000000000000000000000C", name="get_weather", input={"city": "Oslo"})
    body = wire([user_message("weather?"), assistant(call), user_message("well?")])
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "user"]
    assert body["messages"][2]["tool_name"] == "get_weather"
    assert body["messages"][2]["content"].startswith("error:")


def test_auth_header_only_when_a_key_is_configured() -> None:
    adapter = OllamaAdapter()
    assert adapter.auth_headers(None) == {} and adapter.auth_headers("") == {}
    assert adapter.auth_headers("ok-key") == {"Authorization": "Bearer ok-key"}
    assert (adapter.provider, adapter.api, adapter.framing) == ("ollama", "ollama_chat", "ndjson")
    assert adapter.default_base_url == "http://127.0.0.1:11434"


def test_tool_ids_never_reach_the_wire_and_the_id_map_is_left_alone() -> None:
    ids = ToolIdMap()
    request = OllamaAdapter().to_wire(tool_conversation(), [WEATHER], AdapterOptions(model="ollama:qwen3:8b"), ids)
    assert len(ids) == 0
    assert "tu_" not in orjson.dumps(request.body).decode()


def test_a_parsed_answer_replays_to_the_same_request_every_time() -> None:
    context = RequestContext(model="ollama:llama3.2", session_id="sess_q")
    answer = OllamaAdapter().from_wire_response(
        WireResponse(200, read_bytes("ollama", "response__chat_tool_calls.json")), context
    )
    call = answer.tool_uses()[0]
    history = [user_message("what is the weather in tokyo?"), answer, tool_result_message(call.id, "11 degrees")]
    first = wire(history, model="ollama:llama3.2", tools=[WEATHER])
    assert first == wire(history, model="ollama:llama3.2", tools=[WEATHER])
    assert first["messages"][1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Tokyo"}}}],
    }
    ids = ToolIdMap()
    read_once = read_chat_request(first, tool_ids=ids)
    read_twice = read_chat_request(first, tool_ids=ids)
    assert read_once.messages[1].tool_uses()[0].id == read_twice.messages[1].tool_uses()[0].id
    rebuilt = OllamaAdapter().to_wire(read_once.messages, read_once.tools, read_once.options).body
    assert rebuilt == first
