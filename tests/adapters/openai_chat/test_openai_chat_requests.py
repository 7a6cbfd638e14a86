"""Requests: every recorded request read into canonical form and rebuilt, plus the to_wire rules.

LIVE-VERBATIM samples must come back as the identical dict (and the identical dict must reach the
server through ModelClient). The other tiers (re-serialized or docs examples) are compared the
same way: nothing in them differs once key order and whitespace are ignored, which dict equality
already does. Every built body is validated against the official SDK's request TypedDicts.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest
from fixture_files import is_live_verbatim, read_json, wire_files
from openai_chat_testkit import (
    FixedCapabilities,
    capabilities_of_sample,
    chat_client,
    json_response,
    sse_response,
    validate_with_sdk,
)

from metis_core.adapters._common.lossy import forget_logged_drops
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, RequestContext
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.events.bus import EventBus
from metis_core.messages import (
    BlockOrigin,
    Citation,
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
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.wire import WireResponse

MODEL = "openai:gpt-4o"


def request_samples() -> list[str]:
    names = [p.name for p in wire_files("openai_chat", "request")]
    return names + [p.name for p in wire_files("openai_chat", "docs_example") if "__request" in p.name]


def adapter_for(caps: AdapterCapabilities) -> OpenAIChatAdapter:
    return OpenAIChatAdapter(registry=FixedCapabilities(caps))  # type: ignore[arg-type]


def rebuild(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    body = read_json("openai_chat", name)
    adapter = adapter_for(capabilities_of_sample(body))
    ids = ToolIdMap()
    read = adapter.read_request(body, tool_ids=ids, session_id="sess_rt")
    return body, adapter.to_wire(read.messages, read.tools, read.options, ids).body


@pytest.mark.parametrize("name", request_samples())
def test_recorded_request_is_rebuilt_from_its_canonical_form(name: str) -> None:
    body, rebuilt = rebuild(name)
    # Dict equality ignores key order and whitespace, the only things the non-verbatim tiers lost.
    assert rebuilt == body, f"{name} ({'exact' if is_live_verbatim('openai_chat', name) else 'semantic'})"
    validate_with_sdk(rebuilt)


@pytest.mark.parametrize("name", [n for n in request_samples() if is_live_verbatim("openai_chat", n)])
def test_live_verbatim_request_reaches_the_server_unchanged(name: str) -> None:
    body = read_json("openai_chat", name)
    caps = capabilities_of_sample(body)
    reader = adapter_for(caps)
    ids = ToolIdMap()
    read = reader.read_request(body, tool_ids=ids)
    answer = json_response(b'{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}')
    client, server = chat_client("openai", answer, capabilities=caps)
    if read.options.stream:
        stream_body = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
        client, server = chat_client("openai", sse_response(stream_body + b"data: [DONE]\n\n"), capabilities=caps)
        list(client.stream(read.messages, read.options.model, tools=read.tools, options=read.options, tool_ids=ids))
    else:
        client.complete(read.messages, read.options.model, tools=read.tools, options=read.options, tool_ids=ids)
    assert orjson.loads(server.requests[0].content) == body


def test_reader_maps_every_role_including_developer() -> None:
    body = read_json("openai_chat", "request__multiple_system_and_user_messages.json")
    read = OpenAIChatAdapter().read_request(body)
    assert [m.role.value for m in read.messages] == [
        "system",
        "system",
        "system",
        "user",
        "user",
        "user",
        "assistant",
        "assistant",
        "assistant",
        "system",
    ]
    assert (read.messages[-1].metadata.provider_raw or {})["wire_role"] == "developer"
    assert read.options.temperature == 0.7 and read.options.extra == {"n": 1, "stream": False}


def test_reader_keeps_tool_results_paired_with_their_calls() -> None:
    body = read_json("openai_chat", "request__tool_result_followup.json")
    ids = ToolIdMap()
    read = OpenAIChatAdapter().read_request(body, tool_ids=ids)
    call = read.messages[1].content[0]
    assert isinstance(call, ToolUseBlock) and call.name == "extract_student_info"
    assert call.input["clubs"] == ["Chess Club", "South Asian Student Association"]
    result = read.messages[2].tool_results()[0]
    assert result.tool_use_id == call.id
    assert ids.provider_id("openai", call.id) == "call_FJStsEjxdODw9tBmQRRkm6vY"
    assert read.options.extra == {"user": "ddtrace-test"}


# --- to_wire rules --------------------------------------------------------------------------


def assistant(*blocks: Any, provider: str = "openai", raw: dict[str, Any] | None = None) -> Message:
    return Message(
        role=Role.ASSISTANT,
        session_id="sess_w",
        content=list(blocks),
        metadata=MessageMetadata(
            model=f"{provider}:gpt-4o",
            provider=provider,
            routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="x", reason="test"),
            usage=Usage(),
            provider_raw=raw,
        ),
    )


WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def build(messages: list[Message], caps: AdapterCapabilities | None = None, **options: Any) -> dict[str, Any]:
    adapter = adapter_for(caps or AdapterCapabilities(supports_images=True))
    request = adapter.to_wire(messages, [WEATHER], AdapterOptions(model=MODEL, session_id="sess_w", **options))
    return request.body


def test_system_messages_stay_in_order_as_system_unless_the_model_takes_developer() -> None:
    history = [system_message("be brief"), user_message("hi"), system_message("now in French")]
    plain = build(history)
    assert [m["role"] for m in plain["messages"]] == ["system", "user", "system"]
    reasoning = build(history, AdapterCapabilities(supports_developer_role=True))
    assert [m["role"] for m in reasoning["messages"]] == ["developer", "user", "developer"]


def test_max_tokens_field_follows_the_capability() -> None:
    assert build([user_message("hi")], max_tokens=50)["max_tokens"] == 50
    body = build([user_message("hi")], AdapterCapabilities(max_tokens_field="max_completion_tokens"), max_tokens=50)
    assert body["max_completion_tokens"] == 50 and "max_tokens" not in body


def test_options_are_mapped_and_validate_against_the_sdk() -> None:
    body = build(
        [user_message("hi")],
        temperature=0.2,
        top_p=0.9,
        stop=["END"],
        tool_choice={"name": "get_weather"},
        parallel_tool_calls=False,
        reasoning_effort="low",
        response_format={"name": "answer", "schema": {"type": "object", "properties": {}}, "strict": True},
        stream=True,
        extra={"seed": 7, "n": 1},
    )
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": {"type": "object", "properties": {}}, "strict": True},
    }
    assert body["stream_options"] == {"include_usage": True}
    assert (body["reasoning_effort"], body["seed"], body["stop"]) == ("low", 7, ["END"])
    assert body["tools"][0]["function"]["parameters"] == WEATHER.input_schema
    validate_with_sdk(body)


def test_tool_round_trip_keeps_call_and_results_adjacent_with_openai_ids() -> None:
    use = ToolUseBlock(id="tu_01HZZZZZZZZZZZZZZZZZZZZZZZ", name="get_weather", input={"city": "Paris"})
    history = [
        user_message("weather?"),
        assistant(TextBlock(text="Checking."), use),
        user_message("(a user message recorded before the result)"),
        tool_result_message(use.id, "sunny", session_id="sess_w"),
    ]
    body = build(history)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "tool", "user"]
    call = body["messages"][1]["tool_calls"][0]
    assert call["id"] == body["messages"][2]["tool_call_id"]
    assert len(call["id"]) <= 40 and call["id"].startswith("call_")
    assert call["function"] == {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    validate_with_sdk(body)


def test_alnum9_capability_gives_nine_alphanumeric_ids() -> None:
    use = ToolUseBlock(id="tu_01HZZZZZZZZZZZZZZZZZZZZZZY", name="get_weather", input={"city": "Rome"})
    history = [user_message("weather?"), assistant(use), tool_result_message(use.id, "rain")]
    body = build(history, AdapterCapabilities(tool_id_style="alnum9"))
    call_id = body["messages"][1]["tool_calls"][0]["id"]
    assert len(call_id) == 9 and call_id.isalnum()
    assert body["messages"][2]["tool_call_id"] == call_id
    assert build(history, AdapterCapabilities(tool_id_style="alnum9"))["messages"][1]["tool_calls"][0]["id"] == call_id


def test_tool_result_image_travels_in_a_user_message_after_the_tool_messages() -> None:
    first = ToolUseBlock(id="tu_01HZZZZZZZZZZZZZZZZZZZZZZA", name="screenshot", input={})
    second = ToolUseBlock(id="tu_01HZZZZZZZZZZZZZZZZZZZZZZB", name="get_weather", input={"city": "Oslo"})
    image = ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgo="), media_type="image/png")
    history = [
        user_message("look"),
        assistant(first, second),
        tool_result_message(first.id, [image]),
        tool_result_message(second.id, "snow"),
    ]
    body = build(history)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "tool", "user"]
    assert body["messages"][2]["content"].startswith("[the image output")
    parts = body["messages"][4]["content"]
    assert parts[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    validate_with_sdk(body)


def test_images_become_image_url_parts_and_file_refs_are_dropped(caplog: pytest.LogCaptureFixture) -> None:
    forget_logged_drops()
    url = ImageBlock(source=ImageSource(kind="url", data="https://example.com/a.png"), media_type="image/png")
    ref = ImageBlock(source=ImageSource(kind="file_ref", data="shots/a.png"), media_type="image/png")
    message = Message(role=Role.USER, session_id="sess_w", content=[TextBlock(text="what is it?"), url, ref])
    adapter = adapter_for(AdapterCapabilities(supports_images=True))
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        request = adapter.to_wire([message], [], AdapterOptions(model=MODEL))
    assert request.body["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": url.source.data}}
    assert len(request.body["messages"][0]["content"]) == 2
    assert [(d.block_type, d.block_index) for d in request.dropped] == [("image", 2)]
    no_images = adapter_for(AdapterCapabilities(supports_images=False)).to_wire(
        [message], [], AdapterOptions(model=MODEL)
    )
    assert no_images.body["messages"][0]["content"] == "what is it?"


def test_thinking_is_dropped_with_a_warn_log_and_no_bus_event(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """canonical-message-format §11.1 test 6."""
    forget_logged_drops()
    emitted: list[Any] = []
    monkeypatch.setattr(EventBus, "emit", lambda self, event: emitted.append(event))
    monkeypatch.setattr(EventBus, "emit_new", lambda self, *a, **k: emitted.append(a))
    origin = BlockOrigin(provider="anthropic", api="messages", model="claude-sonnet-4-6")
    reply = assistant(
        ThinkingBlock(text="let me think", signature="sig", origin=origin),
        RedactedThinkingBlock(data="opaque", origin=origin),
        TextBlock(text="Answer."),
        provider="anthropic",
    )
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        request = adapter_for(AdapterCapabilities()).to_wire(
            [user_message("q"), reply], [], AdapterOptions(model=MODEL, session_id="sess_w")
        )
    assert request.body["messages"][1] == {"role": "assistant", "content": "Answer."}
    records = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [(r.block_type, r.message_id, r.session_id, r.adapter) for r in records] == [  # type: ignore[attr-defined]
        ("thinking", reply.id, "sess_w", "openai/chat_completions"),
        ("redacted_thinking", reply.id, "sess_w", "openai/chat_completions"),
    ]
    assert all("cannot carry thinking" in r.reason for r in records)  # type: ignore[attr-defined]
    assert emitted == []
    assert [d.block_type for d in request.dropped] == ["thinking", "redacted_thinking"]


def test_replay_to_openai_uses_the_issued_arguments_string_and_custom_calls() -> None:
    adapter = OpenAIChatAdapter()
    context = RequestContext(model=MODEL, session_id="sess_w")
    parsed = adapter.from_wire_response(WireResponse(200, _sample_bytes("response__parallel_tool_calls.json")), context)
    custom = adapter.from_wire_response(
        WireResponse(200, _sample_bytes("response__reasoning_tokens_custom_tool_call.json")), context
    )
    history = [user_message("q"), parsed]
    history += [tool_result_message(u.id, "ok") for u in parsed.tool_uses()]
    history += [custom, tool_result_message(custom.tool_uses()[0].id, "8")]
    body = adapter_for(AdapterCapabilities()).to_wire(history, [], AdapterOptions(model=MODEL), context.tool_ids).body
    calls = body["messages"][1]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_fdNz3vOBKYgOIpMdWotB9MjY", "call_h1DWI1POMJLb0KwIyQHWXD4p"]
    assert calls[0]["function"]["arguments"] == '{"city": "Edinburgh", "country": "GB", "units": "c"}'
    custom_call = body["messages"][4]["tool_calls"][0]
    assert custom_call == {
        "id": "call_QpgJRI5C9DcjExMNU6lrJPcu",
        "type": "custom",
        "custom": {"name": "math_exp", "input": "4 + 4"},
    }
    validate_with_sdk(body)


def test_arguments_edited_after_the_fact_are_reserialized_not_replayed() -> None:
    use = ToolUseBlock(id="tu_01HZZZZZZZZZZZZZZZZZZZZZZC", name="get_weather", input={"city": "Lyon"})
    stale = {"tool_arguments": {use.id: '{"city": "Paris"}'}}
    body = build([user_message("q"), assistant(use, raw=stale), tool_result_message(use.id, "ok")])
    assert body["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"city":"Lyon"}'


def _sample_bytes(name: str) -> bytes:
    from fixture_files import read_bytes

    return read_bytes("openai_chat", name)


def test_an_assistant_turns_refusal_citations_and_texts_each_go_where_chat_takes_them() -> None:
    forget_logged_drops()
    own = BlockOrigin(provider="openai", api="chat_completions", model="gpt-4o")
    foreign = BlockOrigin(provider="anthropic", api="messages", model="claude-sonnet-4-6")
    reply = assistant(
        TextBlock(text="I can't help with that."),
        TextBlock(text="Oslo is cold.", citations=[Citation(url="https://a.example", origin=own)]),
        TextBlock(text="Bergen is wet.", citations=[Citation(url="https://b.example", origin=foreign)]),
        raw={"refusal": "I can't help with that."},
    )
    use = ToolUseBlock(id="tu_01HZZZZZZZZZZZZZZZZZZZZZZD", name="get_weather", input={"city": "Oslo"})
    history = [user_message("q"), reply, user_message("again"), assistant(use),
               tool_result_message(use.id, [TextBlock(text="snow"), TextBlock(text="-3 C")])]
    adapter = adapter_for(AdapterCapabilities())
    request = adapter.to_wire(history, [WEATHER], AdapterOptions(model=MODEL, session_id="sess_w"))
    wire = request.body["messages"]
    texts = [{"type": "text", "text": "Oslo is cold."}, {"type": "text", "text": "Bergen is wet."}]
    assert wire[1] == {"role": "assistant", "refusal": "I can't help with that.", "content": texts}
    assert [(d.block_type, d.block_index) for d in request.dropped] == [("citations", 1), ("citations", 2)]
    assert "takes no annotations" in request.dropped[0].reason
    foreign_drop = request.dropped[1].reason
    assert "another provider's objects" in foreign_drop and "https://b.example" in foreign_drop
    assert wire[4] == {"role": "tool", "tool_call_id": wire[3]["tool_calls"][0]["id"], "content": "snow\n-3 C"}
    validate_with_sdk(request.body)
