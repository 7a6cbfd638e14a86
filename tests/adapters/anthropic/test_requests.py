"""Requests: every recorded body is read to canonical form and rebuilt; to_wire's placement rules.

LIVE-VERBATIM samples must come back dict-equal. The others were re-serialized by their recorder
or written by another client, so they are compared after normalizing what is legitimately
different (see `normalize`). Every body we build validates against the official SDK's params type.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from anthropic.types.message_create_params import (
    MessageCreateParamsNonStreaming,
    MessageCreateParamsStreaming,
)
from fixture_files import is_live_verbatim, read_json, wire_files
from pydantic import TypeAdapter, ValidationError

from metis_core.adapters._common.lossy import forget_logged_drops
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.anthropic.request_reader import read_request
from metis_core.adapters.base import AdapterOptions
from metis_core.config import load_config
from metis_core.errors import InvalidRequestError
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
from metis_core.models.registry import ModelRegistry

ADAPTER = AnthropicAdapter()
REQUESTS = [p.name for p in wire_files("anthropic", "request")]
NON_STREAMING = TypeAdapter(MessageCreateParamsNonStreaming)
STREAMING = TypeAdapter(MessageCreateParamsStreaming)


def materialize(value: Any) -> Any:
    """Pydantic validates SDK `Iterable[...]` fields lazily: walk them so nested blocks are checked."""
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or type(value).__name__ == "ValidatorIterator":
        return [materialize(v) for v in value]
    return value


def validate_with_sdk(body: dict[str, Any]) -> None:
    adapter = STREAMING if body.get("stream") else NON_STREAMING
    materialize(adapter.validate_python(body))


def normalize(body: dict[str, Any]) -> dict[str, Any]:
    """Equivalent spellings: `stream: false` = absent; user string content = one text block; tool_result
    string content = one text block; `is_error: false` = absent; `caller` (a response-only echo) dropped."""
    out = copy.deepcopy(body)
    if out.get("stream") is False:
        del out["stream"]
    for turn in out["messages"]:
        if isinstance(turn["content"], str):
            turn["content"] = [{"type": "text", "text": turn["content"]}]
        for block in turn["content"]:
            block.pop("caller", None)
            if block["type"] == "tool_result":
                if isinstance(block.get("content"), str):
                    block["content"] = [{"type": "text", "text": block["content"]}]
                if block.get("is_error") is False:
                    del block["is_error"]
    return out


def registry_with(home: Path, models: dict[str, Any]) -> ModelRegistry:
    """The built-in registry plus user `models:` entries, the way a user's config.yaml adds them."""
    (home / "config.yaml").write_text(yaml.safe_dump({"models": models}), encoding="utf-8")
    return ModelRegistry.load(load_config(home))


def rebuild(body: dict[str, Any]) -> tuple[dict[str, Any], list[Message]]:
    ids = ToolIdMap()
    read = read_request(body, tool_ids=ids, session_id="sess_req")
    wire = ADAPTER.to_wire(read.messages, read.tools, read.options, ids)
    assert wire.dropped == [] and read.skipped == []
    assert wire.path == "/v1/messages" and wire.headers == {"anthropic-version": "2023-06-01"}
    return wire.body, read.messages


@pytest.mark.parametrize("name", REQUESTS)
def test_recorded_request_is_rebuilt_from_canonical_form(name: str) -> None:
    body = read_json("anthropic", name)
    rebuilt, _ = rebuild(body)
    if is_live_verbatim("anthropic", name):
        assert rebuilt == body
    else:
        assert normalize(rebuilt) == normalize(body)
    validate_with_sdk(rebuilt)


def test_live_verbatim_samples_are_most_of_the_request_fixtures() -> None:
    verbatim = [n for n in REQUESTS if is_live_verbatim("anthropic", n)]
    assert len(verbatim) >= 6  # the exact-equality test above is not vacuous


def test_sdk_validation_catches_a_malformed_body() -> None:
    with pytest.raises(ValidationError):
        validate_with_sdk(
            {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "bogus"}]}]}
        )


def test_tool_results_and_following_user_text_share_one_user_turn() -> None:
    body = read_json("anthropic", "request__parallel_tool_results_with_system.json")
    _, messages = rebuild(body)
    assert [m.role for m in messages] == [Role.SYSTEM, Role.USER, Role.ASSISTANT] + [Role.TOOL] * 4
    follow_up = [*messages, user_message("so who is youngest?")]
    ids = ToolIdMap()
    read = read_request(body, tool_ids=ids)
    wire = ADAPTER.to_wire([*read.messages, user_message("so who is youngest?")], read.tools, read.options, ids)
    last = wire.body["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result"] * 4 + ["text"]
    assert last["content"][-1]["text"] == "so who is youngest?"
    assert len(follow_up) == 8


def _assistant(*blocks: Any, model: str = "anthropic:claude-sonnet-4-5") -> Message:
    return Message(
        role=Role.ASSISTANT,
        content=list(blocks),
        metadata=MessageMetadata(
            model=model,
            provider=model.split(":")[0],
            usage=Usage(),
            routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=model, reason="test"),
        ),
    )


def options(**kwargs: Any) -> AdapterOptions:
    return AdapterOptions(model="anthropic:claude-sonnet-4-5", session_id="sess_t", **kwargs)


def test_several_system_messages_are_hoisted_in_order_as_blocks_and_one_as_a_string() -> None:
    history = [system_message("one"), user_message("hi"), system_message("two")]
    body = ADAPTER.to_wire(history, [], options()).body
    assert body["system"] == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert ADAPTER.to_wire(history[:2], [], options()).body["system"] == "one"


def test_cache_breakpoint_on_a_system_message_forces_block_form() -> None:
    cached = system_message("long prefix")
    cached.metadata.provider_raw = {"anthropic": {"cache_control": {"type": "ephemeral"}}}
    body = ADAPTER.to_wire([cached, user_message("q")], [], options()).body
    assert body["system"] == [{"type": "text", "text": "long prefix", "cache_control": {"type": "ephemeral"}}]


def test_consecutive_user_messages_are_merged_into_one_turn() -> None:
    body = ADAPTER.to_wire([user_message("a"), user_message("b")], [], options()).body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


def test_tool_ids_use_anthropic_style_and_are_stable_across_calls() -> None:
    use = ToolUseBlock(id="tu_01J000000000000000000000AB", name="read", input={"path": "a"})
    history = [user_message("go"), _assistant(use), tool_result_message(use.id, "data")]
    ids = ToolIdMap()
    first = ADAPTER.to_wire(history, [], options(), ids).body
    second = ADAPTER.to_wire(history, [], options(), ToolIdMap(ids.to_dict())).body
    wire_id = first["messages"][1]["content"][0]["id"]
    assert wire_id == "toolu_01J000000000000000000000AB"
    assert first["messages"][2]["content"][0]["tool_use_id"] == wire_id
    assert first == second


def test_unanswered_tool_use_gets_a_synthetic_error_result_so_the_api_accepts_it() -> None:
    use = ToolUseBlock(id="tu_01J000000000000000000000CD", name="run", input={})
    body = ADAPTER.to_wire([user_message("go"), _assistant(use), user_message("next")], [], options()).body
    result_turn = body["messages"][2]
    assert result_turn["role"] == "user"
    assert result_turn["content"][0]["type"] == "tool_result" and result_turn["content"][0]["is_error"] is True
    assert result_turn["content"][1] == {"type": "text", "text": "next"}
    validate_with_sdk(body)


def test_thinking_from_another_origin_is_dropped_with_a_warn_log_and_no_bus_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    forget_logged_drops()
    foreign = ThinkingBlock(
        text="hmm", signature="enc_xyz", origin=BlockOrigin(provider="openai", api="responses", model="o3")
    )
    reply = _assistant(foreign, TextBlock(text="answer"), model="openai:o3")
    history = [user_message("q"), reply, user_message("more")]
    with caplog.at_level(logging.WARNING, logger="metis_core.adapters.lossy"):
        wire = ADAPTER.to_wire(history, [], options())
    assert wire.body["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "answer"}]}
    (record,) = [r for r in caplog.records if r.name == "metis_core.adapters.lossy"]
    assert record.levelno == logging.WARNING
    assert (record.session_id, record.message_id, record.block_type, record.adapter) == (  # type: ignore[attr-defined]
        "sess_t",
        reply.id,
        "thinking",
        "anthropic/messages",
    )
    assert "openai/responses/o3" in record.reason  # type: ignore[attr-defined]
    assert [(d.block_type, d.block_index) for d in wire.dropped] == [("thinking", 0)]
    assert not [r for r in caplog.records if "bus" in r.name]


def test_thinking_and_redacted_thinking_replay_verbatim_to_their_own_model_only() -> None:
    origin = BlockOrigin(provider="anthropic", api="messages", model="claude-sonnet-4-5")
    reply = _assistant(
        ThinkingBlock(text="", signature="sig==", origin=origin),
        RedactedThinkingBlock(data="opaque", origin=origin),
        TextBlock(text="ok"),
    )
    history = [user_message("q"), reply, user_message("again")]
    same = ADAPTER.to_wire(history, [], options()).body["messages"][1]["content"]
    assert same[:2] == [
        {"type": "thinking", "thinking": "", "signature": "sig=="},
        {"type": "redacted_thinking", "data": "opaque"},
    ]
    other = ADAPTER.to_wire(history, [], AdapterOptions(model="anthropic:claude-haiku-4-5")).body
    assert other["messages"][1]["content"] == [{"type": "text", "text": "ok"}]


def test_file_ref_images_and_images_to_text_only_models_are_dropped(tmp_path: Path) -> None:
    image = ImageBlock(source=ImageSource(kind="file_ref", data="shots/a.png"), media_type="image/png")
    url = ImageBlock(source=ImageSource(kind="url", data="https://x/y.jpg"), media_type="image/jpeg")
    history = [Message(role=Role.USER, content=[TextBlock(text="see"), image, url])]
    wire = ADAPTER.to_wire(history, [], options())
    assert wire.body["messages"][0]["content"][1] == {
        "type": "image",
        "source": {"type": "url", "url": "https://x/y.jpg"},
    }
    assert [(d.block_type, d.block_index) for d in wire.dropped] == [("image", 1)]
    blind = AnthropicAdapter(registry_with(tmp_path, {"anthropic:text-only": {"supports_images": False}}))
    dropped = blind.to_wire(history, [], AdapterOptions(model="anthropic:text-only")).dropped
    assert [d.block_index for d in dropped] == [1, 2]


def test_options_map_to_max_tokens_thinking_tool_choice_stop_and_structured_output() -> None:
    tool = ToolDefinition(name="add", description="Adds.", input_schema={"type": "object", "properties": {}})
    body = ADAPTER.to_wire(
        [user_message("q")],
        [tool],
        options(
            thinking_budget_tokens=2048,
            tool_choice={"name": "add"},
            parallel_tool_calls=False,
            stop=["END"],
            temperature=0.2,
            top_p=0.9,
            response_format={"name": "r", "schema": {"type": "object", "properties": {}}},
        ),
    ).body
    assert body["max_tokens"] == 16_384  # registry limit 64k, capped for a default
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["tool_choice"] == {"type": "tool", "name": "add", "disable_parallel_tool_use": True}
    assert (body["stop_sequences"], body["temperature"], body["top_p"]) == (["END"], 0.2, 0.9)
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": {"type": "object", "properties": {}}}}
    validate_with_sdk(body)
    required = ADAPTER.to_wire([user_message("q")], [tool], options(tool_choice="required")).body
    assert required["tool_choice"] == {"type": "any"}


def test_max_tokens_defaults_follow_the_registry_and_unknown_models_get_8192() -> None:
    opus3 = ADAPTER.to_wire([user_message("q")], [], AdapterOptions(model="anthropic:claude-3-opus-20240229")).body
    assert opus3["max_tokens"] == 4096
    unknown = ADAPTER.to_wire([user_message("q")], [], AdapterOptions(model="anthropic:claude-next-9")).body
    assert unknown["max_tokens"] == 8192
    big_budget = ADAPTER.to_wire([user_message("q")], [], options(thinking_budget_tokens=20_000)).body
    assert big_budget["max_tokens"] > 20_000
    effort = ADAPTER.to_wire([user_message("q")], [], options(reasoning_effort="low")).body
    assert effort["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_stream_flag_and_extra_fields_reach_the_body() -> None:
    body = ADAPTER.to_wire([user_message("q")], [], options(stream=True, extra={"metadata": {"user_id": "u1"}})).body
    assert body["stream"] is True and body["metadata"] == {"user_id": "u1"}
    validate_with_sdk(body)


@pytest.mark.parametrize(
    "body",
    [
        {"messages": []},
        {"model": "claude-haiku-4-5", "messages": "hi"},
        {"model": "claude-haiku-4-5", "messages": [{"role": "system", "content": "x"}]},
        {
            "model": "claude-haiku-4-5",
            "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}],
        },
    ],
)
def test_reader_rejects_malformed_requests_with_invalid_request_error(body: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequestError):
        read_request(body)
