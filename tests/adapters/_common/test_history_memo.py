"""The history memo: a history sent again maps from what its last request kept to what a fresh mapping
gives, and whatever changed inside it (the content list, a block, a tool input dict, its metadata), the target
or the id map it goes out with, maps it afresh; canonical values refuse assignment."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from metis_core.adapters._common.history_memo import HistoryMemo, first_sight, keep, recall
from metis_core.adapters._common.token_estimate import _surveys, survey_history
from metis_core.adapters._common.tool_ids import ToolIdMap, UsedIds
from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.messages import (
    ImageBlock,
    ImageSource,
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    user_message,
)

TARGETS = {
    "openai": (OpenAIChatAdapter(), "openai:gpt-4o-mini"),
    "anthropic": (AnthropicAdapter(), "anthropic:claude-haiku-4-5"),
}


def conversation() -> list[Message]:
    call = ToolUseBlock(id="tu_01ABC", name="lookup", input={"q": "x", "filters": {"year": [2024]}})
    result = ToolResultBlock(tool_use_id="tu_01ABC", content=[TextBlock(text="42")])
    return [
        user_message("find x"),
        Message(role=Role.ASSISTANT, content=[TextBlock(text="looking"), call], metadata=MessageMetadata(
            model="openai:gpt-4o-mini", provider="openai", status=MessageStatus.PARTIAL)),
        Message(role=Role.TOOL, content=[result], metadata=MessageMetadata(parent_tool_use_id="tu_01ABC")),
        user_message("thanks"),
    ]


def send(target: str, messages: list[Message], ids: ToolIdMap | None = None, **options: Any) -> dict[str, Any]:
    adapter, model = TARGETS[target]
    ids = ToolIdMap() if ids is None else ids
    return adapter.to_wire(messages, [], AdapterOptions(model=model, **options), ids).body


def fresh(target: str, messages: list[Message], ids: ToolIdMap | None = None, **options: Any) -> dict[str, Any]:
    """The same history as new objects: never seen, so mapped from scratch."""
    return send(target, [m.model_copy(deep=True) for m in messages], ids, **options)


def wire_of(body: dict[str, Any], index: int) -> Any:
    return body["messages"][index]


@pytest.fixture(params=sorted(TARGETS))
def target(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_message_sent_again_maps_from_its_memo_to_the_fresh_mapping(target: str) -> None:
    history = conversation()
    first, second, third = (send(target, history) for _ in range(3))
    assert first == second == third == fresh(target, history)
    if target == "openai":
        assert wire_of(third, 1) is wire_of(second, 1)  # the assistant message came from the memo
    else:
        assert wire_of(third, 1)["content"] is wire_of(second, 1)["content"]


def _append_block(history: list[Message]) -> None:
    history[3].content.append(TextBlock(text="and y"))


def _replace_block(history: list[Message]) -> None:
    history[1].content[0] = TextBlock(text="searching")


def _replace_content_list_item(history: list[Message]) -> None:
    result = history[2].content[0]
    assert isinstance(result, ToolResultBlock)
    result.content[0] = TextBlock(text="43")


def _mutate_tool_input(history: list[Message]) -> None:
    call = history[1].content[1]
    assert isinstance(call, ToolUseBlock)
    call.input["filters"]["year"].append(2025)  # nested, in place


def _mutate_metadata(history: list[Message]) -> None:
    raw = {"refusal": "looking", "anthropic": {"cache_control": {"type": "ephemeral"}}}
    history[1].metadata.provider_raw = raw  # OpenAI: a refusal; Anthropic: a cache breakpoint


def _add_image(history: list[Message]) -> None:
    history[0].content.append(ImageBlock(source=ImageSource(kind="url", data="https://x.test/a.png"),
                                         media_type="image/png"))


CHANGES: list[Callable[[list[Message]], None]] = [
    _append_block, _replace_block, _replace_content_list_item, _mutate_tool_input, _mutate_metadata, _add_image,
]


@pytest.mark.parametrize("change", CHANGES, ids=lambda change: change.__name__.strip("_"))
def test_a_change_inside_a_sent_message_maps_it_afresh(target: str, change: Callable[[list[Message]], None]) -> None:
    history = conversation()
    before = copy.deepcopy([send(target, history) for _ in range(2)][-1])  # Anthropic's tool input is the dict
    change(history)
    after = send(target, history)
    assert after == fresh(target, history)
    assert after != before


def test_another_model_or_id_map_maps_the_history_afresh() -> None:
    history = conversation()
    for _ in range(2):
        send("openai", history)
    assert send("openai", history, session_id="s2") == fresh("openai", history, session_id="s2")
    known = ToolIdMap({"openai": {"tu_01ABC": "call_issued_by_openai"}})
    body = send("openai", history, known)
    assert body == fresh("openai", history, ToolIdMap({"openai": {"tu_01ABC": "call_issued_by_openai"}}))
    assert wire_of(body, 1)["tool_calls"][0]["id"] == "call_issued_by_openai"
    assert wire_of(body, 2)["tool_call_id"] == "call_issued_by_openai"
    adapter, _ = TARGETS["openai"]
    on_other = adapter.to_wire(history, [], AdapterOptions(model="openai:gpt-4.1"), ToolIdMap()).body
    assert on_other["model"] == "gpt-4.1" and on_other["messages"] == fresh("openai", history)["messages"]


def test_a_fresh_id_map_takes_the_held_ids_only_where_it_would_mint_the_same() -> None:
    minted = (("tu_01A", "call_01A"), ("tu_01B", "call_01B"))
    for _ in range(2):  # the verdict is made once per kept pairs: asked again, it answers the same
        fresh_map = ToolIdMap()
        assert fresh_map.bind_minted("openai", UsedIds(minted, "openai"))
        assert fresh_map.to_dict() == {"openai": dict(minted)}
    for pairs in ((("tu_01A", "call_issued_by_openai"),), (("tu_01A", "call_01A"), ("tu_01B", "call_01A"))):
        fresh_map = ToolIdMap()
        assert not fresh_map.bind_minted("openai", UsedIds(pairs, "openai")) and fresh_map.to_dict() == {}
    assert not ToolIdMap({"openai": {"tu_01C": "call_01C"}}).bind_minted("openai", UsedIds(minted, "openai"))
    history = conversation()
    issued = ToolIdMap({"openai": {"tu_01ABC": "call_issued_by_openai"}})
    for _ in range(2):
        assert wire_of(send("openai", history, issued), 1)["tool_calls"][0]["id"] == "call_issued_by_openai"
    assert send("openai", history) == fresh("openai", history)  # a fresh map sends the id it mints
    assert wire_of(send("openai", history), 2)["tool_call_id"] == "call_01ABC"


def test_the_survey_of_a_changed_message_is_taken_again() -> None:
    history = conversation()
    first = [survey_history(history, []) for _ in range(3)][-1]
    assert first == survey_history([m.model_copy(deep=True) for m in history], [])
    _mutate_tool_input(history)
    assert survey_history(history, []) == survey_history([m.model_copy(deep=True) for m in history], [])
    assert survey_history(history, [])[0] > first[0]
    history[3].content.append(TextBlock(text=""))  # an empty text: no longer in repaired form
    assert survey_history(history, [])[2] is False


def test_the_survey_is_taken_again_only_for_the_metadata_field_it_reads() -> None:
    history = conversation()
    for _ in range(2):
        survey_history(history, [])
    _mutate_metadata(history)  # provider_raw: the mappings read it (their tables map afresh), the survey does not
    assert recall(_surveys, history) is not None
    history[1].metadata.status = MessageStatus.COMPLETE  # the repair check reads it
    assert recall(_surveys, history) is None
    assert survey_history(history, []) == survey_history([m.model_copy(deep=True) for m in history], [])


def test_a_status_change_leaves_a_mapping_held_and_the_body_as_a_fresh_mapping_gives(target: str) -> None:
    history = conversation()  # history[1] is PARTIAL: the repair pass, not the mapping, reads status
    model = TARGETS[target][1]
    before = [send(target, history) for _ in range(3)][-1]
    builder_memo = _memo_of(target, model)
    history[1].metadata.status = MessageStatus.COMPLETE
    assert recall(builder_memo, history) is not None
    assert send(target, history) == fresh(target, history) == before


def _memo_of(target: str, model: str) -> Any:
    """The table the target's request builder keeps its histories in."""
    if target == "openai":
        from metis_core.adapters.openai_chat.request import ChatRequestBuilder

        adapter, _ = TARGETS[target]
        return ChatRequestBuilder(provider=adapter.provider, capabilities=adapter.capabilities(model),
                                  options=AdapterOptions(model=model), tool_ids=ToolIdMap(),
                                  adapter_name=adapter.adapter_name).memo
    from metis_core.adapters.anthropic.request import _Builder, capabilities_or_none

    adapter, _ = TARGETS[target]
    return _Builder(AdapterOptions(model=model), ToolIdMap(), capabilities_or_none(adapter, model)).memo


def test_canonical_values_refuse_assignment() -> None:
    message = conversation()[1]
    text = message.content[0]
    assert isinstance(text, TextBlock)
    with pytest.raises(ValidationError, match="frozen"):
        text.text = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        message.session_id = "other"  # type: ignore[misc]
    changed = text.model_copy(update={"text": "changed"})
    assert isinstance(changed, TextBlock) and changed.text == "changed"


def test_a_memoized_message_records_its_lossy_drops_on_every_request() -> None:
    history = conversation()
    history[1].content.insert(0, ThinkingBlock(text="hmm", signature="sig"))  # Chat Completions cannot carry it
    adapter, model = TARGETS["openai"]
    drops = [adapter.to_wire(history, [], AdapterOptions(model=model), ToolIdMap()).dropped for _ in range(3)]
    assert [[(d.message_id, d.block_type) for d in found] for found in drops] == [[(history[1].id, "thinking")]] * 3


def test_a_growing_history_resumes_to_the_fresh_mapping_and_id_map(target: str) -> None:
    history = conversation()
    for _ in range(2):
        send(target, history[:2])
    for end in (3, 4):
        ids, fresh_ids = ToolIdMap(), ToolIdMap()
        assert send(target, history[:end], ids) == fresh(target, history[:end], fresh_ids)
        assert ids.to_dict() == fresh_ids.to_dict() != {}
    other = [history[0], user_message("something else")]  # same first message, another history
    assert send(target, other) == fresh(target, other)


def test_a_history_is_held_by_its_first_message_until_seen_again_then_resumed_while_unchanged() -> None:
    table = HistoryMemo[str]().table("test")
    history = conversation()
    assert first_sight(table, history)
    assert table[id(history[0])].messages == [history[0]]  # a one-off request keeps nothing else alive
    assert recall(table, history) is None and not first_sight(table, history)
    keep(table, history, "state at the end", 0)
    assert recall(table, history) == (4, "state at the end")
    assert recall(table, [*history, user_message("more")]) == (4, "state at the end")
    history[2].metadata.provider = "anthropic"  # a field the mappings read
    assert recall(table, history) is None


def test_one_check_of_the_messages_serves_the_survey_and_the_mapping_of_a_request(
        target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from metis_core.adapters._common import history_memo
    from metis_core.adapters._common.token_estimate import surveyed_history

    history = conversation()
    history[1].metadata.status = MessageStatus.COMPLETE  # in repaired form: the survey hands the list on as it is
    history[1].metadata.usage = Usage(input_tokens=1, output_tokens=1)
    history[1].metadata.routing = RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="x:y", reason="t")
    adapter, model = TARGETS[target]

    def request() -> dict[str, Any]:
        return adapter.to_wire(surveyed_history(history, [])[0], [], AdapterOptions(model=model), ToolIdMap()).body

    for _ in range(3):
        request()
    reads: list[object] = []
    read = history_memo._read_watched
    monkeypatch.setattr(history_memo, "_read_watched", lambda fields: reads.append(fields) or read(fields))
    assert request() == fresh(target, history)
    assert len(reads) == len(history)  # each message's metadata read once: by the survey's check
    _mutate_tool_input(history)
    assert request() == fresh(target, history)  # a change between two requests is seen by the next one's check
