"""History repair: idempotent, logged, and leaves a history every target accepts."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from metis_core.adapters._common import repair
from metis_core.adapters._common.repair import MISSING_RESULT_TEXT, RepairedHistory, repair_history
from metis_core.adapters._common.token_estimate import survey_history, surveyed_history
from metis_core.messages import (
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    ToolUseBlock,
    Usage,
    check_session,
    system_message,
    tool_result_message,
    user_message,
)


def assistant(*blocks: object, status: MessageStatus = MessageStatus.COMPLETE) -> Message:
    return Message(
        role=Role.ASSISTANT,
        content=list(blocks),
        metadata=MessageMetadata(
            model="openai:gpt-5", provider="openai", status=status,
            routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="openai:gpt-5", reason="t"),
            usage=Usage(cost_usd=Decimal(0), pricing_version="t"),
        ),
    )


def test_tool_use_without_result_gets_a_synthetic_error_result(caplog: pytest.LogCaptureFixture) -> None:
    call = assistant(ToolUseBlock(id="tu_1", name="read_file", input={}))
    with caplog.at_level(logging.WARNING):
        fixed = repair_history([user_message("go"), call, user_message("next")])
    assert [m.role for m in fixed] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER]
    result = fixed[2].tool_results()[0]
    assert result.tool_use_id == "tu_1" and result.is_error and result.text() == MISSING_RESULT_TEXT
    assert "had no result" in caplog.text
    check_session(fixed)


def test_result_without_tool_use_is_dropped() -> None:
    fixed = repair_history([user_message("go"), tool_result_message("tu_ghost", "x")])
    assert [m.role for m in fixed] == [Role.USER]


def test_user_message_between_call_and_result_is_moved_after_the_result() -> None:
    call = assistant(ToolUseBlock(id="tu_1", name="t", input={}), ToolUseBlock(id="tu_2", name="t", input={}))
    history = [user_message("go"), call, user_message("meanwhile"), tool_result_message("tu_2", "b"),
               tool_result_message("tu_1", "a")]
    fixed = repair_history(history)
    assert [m.role for m in fixed] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL, Role.USER]
    assert [m.tool_results()[0].tool_use_id for m in fixed[2:4]] == ["tu_1", "tu_2"]  # call order


def test_empty_text_blocks_are_dropped_and_empty_messages_removed() -> None:
    fixed = repair_history([user_message(""), user_message("real"),
                            assistant(TextBlock(text=""), TextBlock(text="answer"))])
    assert [m.text() for m in fixed] == ["real", "answer"]
    assert len(fixed[1].content) == 1


def test_unexecuted_calls_of_a_cancelled_message_are_dropped() -> None:
    cancelled = assistant(TextBlock(text="let me"), ToolUseBlock(id="tu_1", name="t", input={}),
                          status=MessageStatus.CANCELLED)
    fixed = repair_history([user_message("go"), cancelled])
    assert [b.type for b in fixed[1].content] == ["text"]


def test_repair_is_idempotent() -> None:
    call = assistant(ToolUseBlock(id="tu_1", name="t", input={}))
    history = [user_message(""), user_message("go"), call, user_message("next"), tool_result_message("tu_x", "?")]
    once = repair_history(history)
    twice = repair_history(once)
    assert [m.model_dump() for m in twice] == [m.model_dump() for m in once]


def test_stored_messages_are_never_modified() -> None:
    message = assistant(TextBlock(text=""), TextBlock(text="answer"))
    repair_history([user_message("q"), message])
    assert len(message.content) == 2


def _call(use_id: str) -> ToolUseBlock:
    return ToolUseBlock(id=use_id, name="read", input={"path": use_id})


def _well_formed() -> list[Message]:
    """Two turns: parallel calls answered in order, then one more call and its answer."""
    return [
        user_message("go"),
        assistant(TextBlock(text="two reads"), _call("tu_a"), _call("tu_b")),
        tool_result_message("tu_a", "A"),
        tool_result_message("tu_b", "B"),
        assistant(_call("tu_c")),
        tool_result_message("tu_c", "C"),
        assistant(TextBlock(text="done")),
    ]


def test_a_well_formed_history_is_sent_as_it_is() -> None:
    history = _well_formed()
    repaired = repair_history(history)
    assert repaired == history and all(a is b for a, b in zip(repaired, history, strict=True))


def _said(history: list[Message]) -> list[tuple[str, list[dict[str, object]]]]:
    return [(m.role.value, [b.model_dump() for b in m.content]) for m in history]


DAMAGES = [
    "none",
    "results out of order",
    "a user message before the last result",
    "a call id used twice",
    "a call in an unfinished message",
    "an empty text block",
    "a result with no call",
]


def _damaged(damage: str) -> list[Message]:
    history = _well_formed()
    if damage == "results out of order":
        history[2], history[3] = history[3], history[2]
    elif damage == "a user message before the last result":
        history.insert(3, user_message("wait"))
    elif damage == "a call id used twice":
        history[4] = assistant(_call("tu_a"))
        history[5] = tool_result_message("tu_a", "again")
    elif damage == "a call in an unfinished message":
        history[4] = assistant(_call("tu_c"), status=MessageStatus.PARTIAL)
    elif damage == "an empty text block":
        history[6] = assistant(TextBlock(text=""), TextBlock(text="done"))
    elif damage == "a result with no call":
        history.append(tool_result_message("tu_gone", "late"))
    return history


@pytest.mark.parametrize("damage", DAMAGES)
def test_the_fast_check_never_changes_what_repair_returns(damage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    history = _damaged(damage)
    fast = repair_history(history)
    monkeypatch.setattr(repair, "_needs_no_repair", lambda messages: False)
    assert _said(fast) == _said(repair_history(history))


def _more_shapes() -> dict[str, list[Message]]:
    call_turn = assistant(_call("tu_a"))
    two_results = tool_result_message("tu_a", "A")
    two_results = two_results.model_copy(update={"content": [*two_results.content, *two_results.content]})
    return {
        "an empty user message": [user_message("go"), user_message("x").model_copy(update={"content": []})],
        "an empty system message": [system_message("x").model_copy(update={"content": []}), user_message("go")],
        "a tool message with two results": [user_message("go"), call_turn, two_results],
        "a result in a user turn": [user_message("go"), call_turn, tool_result_message("tu_a", "A").model_copy(
            update={"role": Role.USER})],
        "a result in a user turn, nothing awaited": [user_message("go"), tool_result_message("tu_a", "A").model_copy(
            update={"role": Role.USER})],
        "a result turn with nothing awaited": [user_message("go"), tool_result_message("tu_a", "A")],
        "a call left unanswered at the end": [user_message("go"), call_turn],
        "an empty history": [],
        "text after a call in the same turn": [user_message("go"), assistant(_call("tu_a"), TextBlock(text="x")),
                                               tool_result_message("tu_a", "A")],
    }


MORE_SHAPES = ["an empty user message", "an empty system message", "a tool message with two results",
               "a result in a user turn", "a result in a user turn, nothing awaited",
               "a result turn with nothing awaited", "a call left unanswered at the end",
               "an empty history", "text after a call in the same turn"]


def test_every_extra_shape_is_named() -> None:
    assert sorted(_more_shapes()) == sorted(MORE_SHAPES)


@pytest.mark.parametrize("name", DAMAGES + MORE_SHAPES)
def test_the_token_survey_finds_the_same_repaired_form_as_the_fast_check(name: str) -> None:
    history = _damaged(name) if name in DAMAGES else _more_shapes()[name]
    assert survey_history(history, [])[2] is repair._needs_no_repair(history)


def test_a_history_the_client_found_repaired_is_not_walked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    history = _well_formed()
    monkeypatch.setattr(repair, "_needs_no_repair", lambda messages: pytest.fail("walked again"))
    repaired = repair_history(RepairedHistory(history))
    assert type(repaired) is list and repaired == history


@pytest.mark.parametrize("name", DAMAGES)
def test_the_client_hands_on_a_repaired_history_only_when_it_is_one(name: str) -> None:
    history = _damaged(name)
    handed, tokens, shape = surveyed_history(history, [])
    assert (type(handed) is RepairedHistory) is (name == "none")
    assert handed == history and (tokens, shape) == survey_history(history, [])[:2]
    assert _said(repair_history(handed)) == _said(repair_history(list(history)))
