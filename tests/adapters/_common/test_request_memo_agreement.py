"""Whatever the request memos keep (a history's wire messages and their JSON, the tool list's, the tool ids
used, the lossy drops, one check of the mutable parts per request), every provider's request is byte for byte
the one a fresh mapping of the same request sends, while the conversation grows, options alternate and
things change in place between requests; from two threads at once; and the shared watch table stays bounded."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

import orjson
import pytest

from metis_core.adapters._common import history_memo
from metis_core.adapters._common.history_memo import HistoryMemo, HistoryTable
from metis_core.adapters._common.per_tool_cache import PerToolCache, WireToolsMemo
from metis_core.adapters._common.token_estimate import _surveys, surveyed_history
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.client import ModelClient, SurveyedHistory
from metis_core.adapters.registry import get_adapter, provider_keys
from metis_core.messages import (
    BlockOrigin,
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
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    system_message,
    user_message,
)

MODELS = {  # provider -> (a model, another model of it)
    "anthropic": ("claude-haiku-4-5", "claude-sonnet-4-5"), "vertex_anthropic": ("claude-3-5-haiku-latest", "x"),
    "openai": ("gpt-4o-mini", "gpt-4o"), "azure": ("gpt-4o-mini", "gpt-4o"), "openrouter": ("openai/gpt-4o", "a/b"),
    "openai_compatible": ("mistral-small-latest", "deepseek-chat"), "openai_responses": ("gpt-4o-mini", "o3"),
    "azure_responses": ("gpt-4o-mini", "gpt-4o"), "gemini": ("gemini-2.0-flash", "gemini-2.5-pro"),
    "vertex": ("gemini-2.0-flash", "gemini-2.5-pro"), "ollama": ("llama3.1", "qwen3"),
    "bedrock": ("amazon.nova-lite-v1:0", "anthropic.claude-3-5-haiku-20241022-v1:0"),
}
SCHEMA = {"name": "answer", "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}
EXTRA = {"x_trace": {"k": 1}, "tools": [{"type": "function", "function": {"name": "extra", "parameters": {}}}]}
CACHED = {"anthropic": {"cache_control": {"type": "ephemeral"}}, "refusal": "no", "extra_content": {"sig": "s"}}


def option_sets(provider: str) -> list[AdapterOptions]:
    """Plain; everything at once (structured output, tool choice, reasoning, streaming, a session, `extra`
    with a list the body holds); another model with Anthropic's hosted tools after the mapped ones and an `extra`
    field. Sent in turn, the same history goes out under each."""
    model, other = (f"{provider}:{name}" for name in MODELS[provider])
    hosted = [{"type": "web_search_20250305", "name": "web_search"}] if "anthropic" in provider else []
    return [
        AdapterOptions(model=model),
        AdapterOptions(model=model, max_tokens=300, tool_choice="required", parallel_tool_calls=False,
                       reasoning_effort="low", response_format=SCHEMA, stream=True, session_id="ses_b", extra=EXTRA),
        AdapterOptions(model=other, tool_choice={"name": "lookup"}, thinking_budget_tokens=2048,
                       provider_tools=hosted, extra={"x_trace": {"k": 2}}),
    ]


def tool(name: str) -> ToolDefinition:
    return ToolDefinition(name=name, description=f"{name} a thing.", input_schema={
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})


def assistant(*blocks: Any, model: str = "anthropic:claude-haiku-4-5") -> Message:
    return Message(role=Role.ASSISTANT, content=list(blocks), metadata=MessageMetadata(
        model=model, provider=model.partition(":")[0], usage=Usage(input_tokens=9, output_tokens=3),
        routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=model, reason="test")))


def result(call_id: str, *parts: TextBlock | ImageBlock) -> Message:
    return Message(role=Role.TOOL, content=[ToolResultBlock(tool_use_id=call_id, content=list(parts))],
                   metadata=MessageMetadata(parent_tool_use_id=call_id))


def turn(history: list[Message], n: int) -> None:
    """One more exchange: a user question, an answer with thinking, text and two calls, their results (one
    with an image in every other turn)."""
    first, second = (f"tu_01TURN{n:04d}{id(history) % 9973:04d}{part}" for part in "AB")
    origin = BlockOrigin(provider="anthropic", api="messages", model="claude-haiku-4-5")
    image = ImageBlock(source=ImageSource(kind="base64", data="aGVsbG8="), media_type="image/png")
    history += [user_message(f"question {n}"),
                assistant(ThinkingBlock(text=f"hm {n}", signature="sig==", origin=origin), TextBlock(text=f"on {n}"),
                          ToolUseBlock(id=first, name="lookup", input={"q": f"x{n}", "opts": {"k": [n]}}),
                          ToolUseBlock(id=second, name="search", input={"q": f"y{n}"})),
                result(first, TextBlock(text=f"answer {n}")),
                result(second, *([TextBlock(text="seen"), image] if n % 2 else [TextBlock(text="none")]))]


class Conversation:
    """What a caller holds between requests: the history, the tool list, the id map (None: fresh per request)."""

    def __init__(self, system: Message | None = None) -> None:
        self.history: list[Message] = [system or system_message("be brief")]
        turn(self.history, 0)
        self.tools = [tool("lookup"), tool("search")]
        self.ids: ToolIdMap | None = None
        self.stored_ids: dict[str, dict[str, str]] = {}
        """When `ids` is None: each request gets a new map of these (as a session store loads it)."""

    def calls(self) -> list[ToolUseBlock]:
        return [block for m in self.history for block in m.content if type(block) is ToolUseBlock]


@contextmanager
def memos_off() -> Iterator[None]:
    """Every request memo derives afresh (an empty history table each time, tools mapped each time)."""
    with (patch.object(HistoryMemo, "table", lambda memo, context: HistoryTable(memo._read_metadata)),
          patch.object(PerToolCache, "__call__", lambda cache, tool: cache._compute(tool)),
          patch.object(WireToolsMemo, "__call__", lambda memo, tools: wire_and_json(memo, tools))):
        yield


def wire_and_json(memo: WireToolsMemo, tools: list[ToolDefinition]) -> tuple[list[dict[str, Any]], bytes]:
    wire = [memo._wire_tool(tool) for tool in tools]
    return wire, orjson.dumps(wire)[1:-1]


def copies(talk: Conversation) -> tuple[list[Message], list[ToolDefinition]]:
    """Copies of every message and tool: objects no memo has seen."""
    return [m.model_copy(deep=True) for m in talk.history], [t.model_copy(deep=True) for t in talk.tools]


def check(provider: str, options: AdapterOptions, talk: Conversation,
          fresh_copies: tuple[list[Message], list[ToolDefinition]] | None = None) -> set[tuple[str, str]]:
    """One request as the client makes it (survey, then the mapping of the list it hands on), against the
    same request mapped afresh (from copies of every message and tool, every memo off) on a copy of the id
    map as it was before the request."""
    adapter = get_adapter(provider)
    ids_before = talk.ids.to_dict() if talk.ids is not None else talk.stored_ids
    ids = talk.ids if talk.ids is not None else ToolIdMap(talk.stored_ids)
    history, _, _ = surveyed_history(talk.history, talk.tools)
    request = adapter.to_wire(history, list(talk.tools), options, ids)
    sent = request.body_json()
    assert sent == orjson.dumps(request.body), provider
    fresh_ids = ToolIdMap(ids_before)
    if fresh_copies is None:  # another thread may be in the memos: copies alone make it fresh
        fresh = adapter.to_wire(*copies(talk), options, fresh_ids)
    else:
        with memos_off():
            fresh = adapter.to_wire(list(fresh_copies[0]), list(fresh_copies[1]), options, fresh_ids)
    assert orjson.loads(sent) == fresh.body, provider
    assert sent == orjson.dumps(fresh.body), provider  # the same key order too: the bytes a fresh mapping sends
    assert [d._values() for d in request.dropped] == [d._values() for d in fresh.dropped], provider
    assert ids.to_dict() == fresh_ids.to_dict(), provider
    return {(provider, part.key) for part in request.encoded if part.count}


def check_all(talk: Conversation, times: int = 1) -> set[tuple[str, str]]:
    """Every provider, each option set in turn; which (provider, body list) went out from kept JSON."""
    fresh_copies, kept = copies(talk), set()
    for provider in provider_keys():
        sets = option_sets(provider)
        for _ in range(times):
            for options in sets:  # the same history under each option set in turn
                kept |= check(provider, options, talk, fresh_copies)
    return kept


def _grow(talk: Conversation) -> None:
    turn(talk.history, len(talk.history))


def _append_to_a_content_list(talk: Conversation) -> None:
    talk.history[1].content.append(TextBlock(text="and y"))
    talk.history[1].content.append(ImageBlock(source=ImageSource(kind="url", data="https://x.test/a.png"),
                                              media_type="image/png"))


def _extend_the_system_prompt(talk: Conversation) -> None:
    talk.history[0].content.append(TextBlock(text="and kind"))


def _change_a_tool_input(talk: Conversation) -> None:
    talk.calls()[0].input["opts"]["k"].append(99)  # nested, in place


def _change_status(talk: Conversation) -> None:
    talk.history[2].metadata.status = MessageStatus.PARTIAL


def _set_provider_raw(talk: Conversation) -> None:
    for message in talk.history[1:3]:
        message.metadata.provider_raw = orjson.loads(orjson.dumps(CACHED))


def _change_provider_raw_in_place(talk: Conversation) -> None:
    raw = talk.history[2].metadata.provider_raw
    assert raw is not None
    raw["anthropic"]["cache_control"]["ttl"] = "1h"
    raw["extra_content"]["sig"] = "t"


def _change_model(talk: Conversation) -> None:
    talk.history[2].metadata.model = "openai_compatible:mistral-small-latest"  # the model a signature is for
    talk.history[2].metadata.provider = "openai_compatible"


def _change_a_tool_schema(talk: Conversation) -> None:
    talk.tools[1].input_schema["properties"]["q"]["description"] = "what to look for"


def _replace_the_tool_list_by_an_equal_one(talk: Conversation) -> None:
    talk.tools = list(talk.tools)


def _replace_a_tool_by_an_equal_copy(talk: Conversation) -> None:
    talk.tools = [talk.tools[0], talk.tools[1].model_copy(deep=True)]


def _describe_a_tool_anew(talk: Conversation) -> None:
    talk.tools[0].description = "Looks it up."


def _share_an_id_map(talk: Conversation) -> None:
    talk.ids = ToolIdMap()


def _bind_an_issued_id(talk: Conversation) -> None:
    issued = {talk.calls()[0].id: "call_issued_by_the_provider"}
    talk.ids = ToolIdMap({namespace: issued for namespace in (*MODELS, "vertex_ai")})


def _fresh_id_maps_again(talk: Conversation) -> None:
    talk.ids = None


def _load_issued_ids_per_request(talk: Conversation) -> None:
    talk.stored_ids = {namespace: {talk.calls()[1].id: "call_issued_2"} for namespace in (*MODELS, "vertex_ai")}


def _offer_fewer_tools_then_all(talk: Conversation) -> None:
    everything = talk.tools
    talk.tools = everything[:1]  # the same first tool object, another list
    check_all(talk)
    talk.tools = everything


CHANGES: list[Callable[[Conversation], None]] = [
    _grow, _append_to_a_content_list, _grow, _extend_the_system_prompt, _change_a_tool_input, _change_status,
    _set_provider_raw, _change_provider_raw_in_place, _change_model, _grow, _change_a_tool_schema,
    _replace_the_tool_list_by_an_equal_one, _replace_a_tool_by_an_equal_copy, _describe_a_tool_anew, _share_an_id_map,
    _grow, _bind_an_issued_id, _grow, _fresh_id_maps_again, _grow, _load_issued_ids_per_request, _grow,
    _offer_fewer_tools_then_all,
]


def test_every_request_of_a_changing_conversation_is_the_fresh_mapping_for_every_provider() -> None:
    talk = Conversation()
    kept = check_all(talk, times=3)  # seen, held, resumed
    for change in CHANGES:
        change(talk)
        try:
            kept |= check_all(talk, times=2)  # the request after the change, then the one resuming from it
        except AssertionError as failed:
            raise AssertionError(f"after {change.__name__}: {failed}") from failed
    memo_providers = ("anthropic", "vertex_anthropic", "openai", "azure", "openrouter", "openai_compatible")
    assert {(provider, key) for provider in memo_providers for key in ("messages", "tools")} <= kept


def test_a_message_replaced_by_an_equal_copy_is_watched_as_the_copy() -> None:
    talk = Conversation()
    _grow(talk)
    check_all(talk, times=2)
    original = talk.history[2]
    talk.history[2] = original.model_copy(deep=True)  # equal: the held history resumes through it
    _grow(talk)
    check_all(talk)
    _change_a_tool_input(talk)  # inside the copy, which the history now holds
    check_all(talk)
    last = user_message("cache up to here")
    last.metadata.provider_raw = orjson.loads(orjson.dumps(CACHED))
    talk.history.append(last)  # in the last turn, which each request builds anew
    check_all(talk, times=2)
    talk.history[-1] = last.model_copy(deep=True)
    talk.history.append(user_message("one more"))  # joins that turn
    check_all(talk, times=2)
    original.content.append(TextBlock(text="no longer sent"))  # the originals, out of the history, change
    last.metadata.provider_raw["anthropic"]["cache_control"]["ttl"] = "1h"
    check_all(talk, times=2)


def test_a_replaced_tool_changed_afterwards_leaves_the_request_alone() -> None:
    talk = Conversation()
    check_all(talk, times=2)
    replaced = talk.tools[1]
    _replace_a_tool_by_an_equal_copy(talk)
    check_all(talk)
    replaced.input_schema["properties"]["q"]["type"] = "integer"  # no longer in the request
    check_all(talk)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_surveyed_list_mapped_again_after_a_change_is_checked_again(provider: str) -> None:
    talk, options = Conversation(), option_sets(provider)[0]
    for _ in range(2):
        check(provider, options, talk)
    surveyed, _, _ = surveyed_history(talk.history, talk.tools)  # the survey's check goes with this list
    get_adapter(provider).to_wire(surveyed, list(talk.tools), options, ToolIdMap())
    _change_a_tool_input(talk)
    again = get_adapter(provider).to_wire(surveyed, list(talk.tools), options, ToolIdMap()).body_json()
    assert again == orjson.dumps(get_adapter(provider).to_wire(*copies(talk), options, ToolIdMap()).body)


def test_the_client_sends_the_fresh_mapping_bytes_for_a_plain_list_and_a_surveyed_history() -> None:
    keys = {provider: "sk-test" for provider in ("openai", "anthropic", "gemini")}
    client = ModelClient(base_urls={provider: "http://127.0.0.1:9" for provider in keys}, api_keys=keys, prices=None)
    talk = Conversation()
    for step in range(6):
        for provider in keys:
            model = f"{provider}:{MODELS[provider][0]}"
            messages = talk.history if step % 2 else SurveyedHistory(talk.history, talk.tools)
            call = client._prepare(messages, model, talk.tools, None, None, "", None, None, False)
            with memos_off():
                fresh = get_adapter(provider).to_wire(*copies(talk), AdapterOptions(model=model), ToolIdMap())
            assert call.body == orjson.dumps(fresh.body), (provider, step)
        (_grow if step % 3 == 2 else _change_a_tool_input)(talk)


def test_two_threads_preparing_requests_for_different_histories_agree_with_fresh_mappings() -> None:
    def run(talk: Conversation) -> None:
        for step in range(6):
            for provider in ("openai", "anthropic", "openrouter"):
                for options in option_sets(provider):
                    check(provider, options, talk)
            (_grow if step % 2 else _change_a_tool_input)(talk)

    shared = system_message("be brief")  # one system prompt object opening every history: one key in every table
    with ThreadPoolExecutor(max_workers=2) as pool:
        for done in [pool.submit(run, Conversation(shared if n % 2 else None)) for n in range(4)]:
            done.result()


def test_the_shared_watch_table_stays_bounded() -> None:
    adapter, options = get_adapter("openai"), AdapterOptions(model="openai:gpt-4o-mini")
    peak = 0
    for n in range(5_000):
        history = [user_message(f"one-off {n}"), assistant(TextBlock(text="ok"))]
        for _ in range(2 if n % 2 else 1):  # half of them sent twice: each of those gets a watch
            adapter.to_wire(surveyed_history(history, [])[0], [], options, ToolIdMap())
        peak = max(peak, len(history_memo._watches))
    assert peak == history_memo.LIMIT * 4  # reached, never passed
    assert len(_surveys) <= history_memo.LIMIT


@pytest.fixture(autouse=True)
def _quiet_drops(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("ERROR", logger="metis_core.adapters.lossy")
