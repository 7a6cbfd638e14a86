"""SurveyedHistory: the client takes a caller's survey of the history instead of walking it again,
and prepares exactly the request a plain list gets; a changed list or other tools are surveyed again."""

from __future__ import annotations

from typing import Any

import pytest
from mock_http import API_KEY, BASE_URL, MODEL

from metis_core.adapters import client as client_module
from metis_core.adapters._common.token_estimate import surveyed_history
from metis_core.adapters.client import ModelClient, SurveyedHistory
from metis_core.messages import (
    Message,
    MessageMetadata,
    Role,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    user_message,
)

TOOLS = [ToolDefinition(name="lookup", description="finds a thing", input_schema={
    "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})]


def answer(*blocks: Any) -> Message:
    return Message.model_construct(role=Role.ASSISTANT, content=list(blocks),
                                   metadata=MessageMetadata(model="claude-haiku-4-5", provider="anthropic"))


HISTORIES: list[list[Message]] = [
    [user_message("hello")],
    [user_message("find x"), answer(TextBlock(text="looking"), ToolUseBlock(id="toolu_1", name="lookup",
                                                                            input={"q": "x"})),
     Message(role=Role.TOOL, content=[ToolResultBlock(tool_use_id="toolu_1", content=[TextBlock(text="42")])],
            metadata=MessageMetadata(parent_tool_use_id="toolu_1")),
     user_message("thanks")],
    # not in repaired form: a tool call without its result, two user turns in a row
    [user_message("find x"), answer(ToolUseBlock(id="toolu_2", name="lookup", input={"q": "x"})),
     user_message("never mind"), user_message("really")],
]


def client() -> ModelClient:
    return ModelClient(base_urls={"anthropic": BASE_URL}, api_keys={"anthropic": API_KEY}, prices=None)


def prepared(model_client: ModelClient, messages: Any, tools: list[ToolDefinition]) -> tuple[Any, ...]:
    call = model_client._prepare(messages, MODEL, tools, None, None, "ses_1", None, None, False)
    return call.url, call.body, call.request.headers, call.request.path


@pytest.mark.parametrize("index", range(len(HISTORIES)))
@pytest.mark.parametrize("tools", [[], TOOLS])
def test_a_surveyed_history_prepares_what_a_plain_list_does_without_a_second_walk(
    index: int, tools: list[ToolDefinition], monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = HISTORIES[index]
    surveyed = SurveyedHistory(messages, tools)
    assert list(surveyed) == messages
    history, tokens, shape = surveyed_history(messages, tools)
    again = surveyed.surveyed()
    assert (type(again[0]), again[0], again[1], again[2]) == (type(history), history, tokens, shape)
    model_client = client()
    general = prepared(model_client, list(messages), tools)
    walks: list[int] = []

    def counted(*args: Any) -> Any:
        walks.append(1)
        return surveyed_history(*args)

    monkeypatch.setattr(client_module, "surveyed_history", counted)
    assert prepared(model_client, surveyed, tools) == general
    assert walks == []


def test_a_changed_list_or_other_tools_are_surveyed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[int] = []

    def counted(*args: Any) -> Any:
        walks.append(1)
        return surveyed_history(*args)

    monkeypatch.setattr(client_module, "surveyed_history", counted)
    model_client = client()
    surveyed = SurveyedHistory(HISTORIES[1], TOOLS)
    other_tools = [ToolDefinition(**TOOLS[0].model_dump())]  # equal, not the same object
    assert prepared(model_client, surveyed, other_tools) == prepared(model_client, list(HISTORIES[1]), other_tools)
    assert len(walks) == 2
    surveyed.append(user_message("one more"))
    assert not surveyed.still_fits(TOOLS)
    assert prepared(model_client, surveyed, TOOLS) == prepared(model_client, list(surveyed), TOOLS)
    assert len(walks) == 4
