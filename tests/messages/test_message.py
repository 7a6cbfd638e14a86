"""The canonical Message: exact JSON round trips, §5 invariants, forward compatibility, hashing."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from metis_core.errors import MessageInvariantError, SessionInvariantError
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
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    check_session,
    tool_result_message,
    user_message,
)


def assistant(*blocks: object, status: MessageStatus = MessageStatus.COMPLETE, **meta: object) -> Message:
    metadata = MessageMetadata(
        model="anthropic:claude-sonnet-4-6",
        provider="anthropic",
        routing=RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model="anthropic:claude-sonnet-4-6",
                                      reason="workspace default"),
        usage=Usage(input_tokens=8, output_tokens=42, cost_usd=Decimal("0.000654"),
                    pricing_version="2026-05-08", latency_ms=820),
        status=status,
    )
    return Message(role=Role.ASSISTANT, session_id="sess_42", content=list(blocks),
                   metadata=metadata.model_copy(update=meta))


def test_every_block_type_round_trips_through_json_exactly() -> None:
    origin = BlockOrigin(provider="anthropic", api="messages", model="claude-sonnet-4-6")
    message = assistant(
        ThinkingBlock(text="let me think", signature="EqQBCkYIBxgCKkA", origin=origin),
        RedactedThinkingBlock(data="EmwKAhgBEgy3", origin=origin),
        TextBlock(text="I'll read it. ünïcødé ✓"),
        ToolUseBlock(id="tu_01HZ100", name="read_file", input={"path": "README.md", "n": [1, 2.5, None]}),
    )
    text = message.to_json()
    again = Message.from_json(text)
    assert again == message
    assert again.to_json() == text
    assert '"cost_usd":"0.000654"' in text  # Decimal as a string, never a float
    assert isinstance(again.metadata.usage.cost_usd, Decimal)  # type: ignore[union-attr]


def test_timestamps_keep_microseconds_in_utc() -> None:
    stamp = datetime(2026, 5, 8, 12, 0, 0, 0, tzinfo=UTC)
    message = user_message("hi").model_copy(update={"created_at": stamp})
    assert '"created_at":"2026-05-08T12:00:00.000000Z"' in message.to_json()
    assert Message.from_json(message.to_json()).created_at == stamp
    with pytest.raises(ValueError, match="timezone-aware"):
        Message(role=Role.USER, content=[TextBlock(text="x")], created_at=datetime(2026, 1, 1))


def test_complete_message_lists_every_violation_not_just_the_first() -> None:
    with pytest.raises(MessageInvariantError) as caught:
        Message(role=Role.ASSISTANT, content=[ToolResultBlock(tool_use_id="tu_x"),
                                              ImageBlock(source=ImageSource(kind="url", data="http://x"),
                                                         media_type="image/png")])
    violations = caught.value.violations
    assert any("tool_result block is not allowed" in v for v in violations)
    assert any("image block is not allowed" in v for v in violations)
    assert any("metadata.model" in v for v in violations)
    assert any("metadata.usage" in v for v in violations)
    assert len(violations) >= 6


@pytest.mark.parametrize(
    ("role", "block", "rule"),
    [
        (Role.USER, ToolUseBlock(id="tu_1", name="x", input={}), "tool_use block is not allowed in a user"),
        (Role.SYSTEM, ImageBlock(source=ImageSource(kind="base64", data="AA=="), media_type="image/png"),
         "image block is not allowed in a system"),
    ],
)
def test_role_content_compatibility(role: Role, block: object, rule: str) -> None:
    with pytest.raises(MessageInvariantError, match=rule):
        Message(role=role, content=[block])


def test_tool_message_needs_exactly_one_result_and_its_parent_id() -> None:
    with pytest.raises(MessageInvariantError) as caught:
        Message(role=Role.TOOL, content=[ToolResultBlock(tool_use_id="tu_a"), ToolResultBlock(tool_use_id="tu_b")])
    assert any("exactly one tool_result" in v for v in caught.value.violations)
    assert any("parent_tool_use_id" in v for v in caught.value.violations)
    ok = tool_result_message("tu_a", "done")
    assert ok.metadata.parent_tool_use_id == "tu_a"


def test_partial_messages_skip_validation() -> None:
    partial = Message(role=Role.ASSISTANT, content=[], metadata=MessageMetadata(status=MessageStatus.PARTIAL))
    assert partial.status is MessageStatus.PARTIAL


def test_empty_system_message_is_a_valid_placeholder() -> None:
    assert Message(role=Role.SYSTEM, content=[]).content == []


def test_session_checks_pairing_of_tool_use_and_results() -> None:
    call = assistant(ToolUseBlock(id="tu_1", name="read_file", input={"path": "a"}))
    good = [user_message("read a"), call, tool_result_message("tu_1", "contents")]
    check_session(good)
    with pytest.raises(SessionInvariantError) as caught:
        check_session([*good, tool_result_message("tu_1", "again"), tool_result_message("tu_ghost", "?")])
    assert any("already answered" in v for v in caught.value.violations)
    assert any("tu_ghost" in v and "no earlier tool_use" in v for v in caught.value.violations)


def test_unknown_block_type_is_skipped_with_a_warning_and_the_message_kept(caplog: pytest.LogCaptureFixture) -> None:
    data = user_message("hello").model_dump(mode="json")
    data["content"].append({"type": "audio", "data": "AAAA"})
    data["metadata"]["future_field"] = {"x": 1}
    with caplog.at_level(logging.WARNING, logger="metis_core.messages"):
        message = Message.model_validate(data)
    assert [b.type for b in message.content] == ["text"]
    assert "unknown content block type 'audio'" in caplog.text
    assert message.metadata.model_extra == {"future_field": {"x": 1}}


def test_content_hash_covers_role_and_content_not_storage_identity() -> None:
    a = user_message("same words", session_id="sess_a")
    b = user_message("same words", session_id="sess_b")
    assert a.id != b.id
    assert a.content_hash() == b.content_hash()
    assert a.content_hash() != user_message("other words").content_hash()
    as_system = Message(role=Role.SYSTEM, content=[TextBlock(text="same words")])
    assert as_system.content_hash() != a.content_hash()
