"""Schema migration of stored messages (§10, §11.1 test 4): write v1, change schema to v2, read."""

from __future__ import annotations

import copy
import logging
from typing import Any

import orjson
import pytest

import metis_core.messages.message as message_module
from metis_core.errors import SchemaMigrationError
from metis_core.messages.message import SCHEMA_VERSION, Message, Role
from metis_core.messages.migrations import MESSAGE_MIGRATIONS, MessageDict, migrate_message_dict


def v1_assistant_dict() -> MessageDict:
    """An assistant message exactly as schema v1 stores it, with a v1-only metadata field."""
    return {
        "id": "01HZ0000000000000000000001",
        "session_id": "sess_1",
        "role": "assistant",
        "content": [{"type": "text", "text": "hello"}],
        "metadata": {
            "model": "anthropic:claude-sonnet-4-6",
            "provider": "anthropic",
            "routing": {"mode": "default", "chosen_model": "anthropic:claude-sonnet-4-6", "reason": "default"},
            "usage": {"input_tokens": 10, "output_tokens": 2, "cost_usd": "0.00006", "pricing_version": "2026-04-16"},
            "status": "complete",
            "finish_reason": "end_turn",
        },
        "created_at": "2026-05-08T10:00:00.000000Z",
        "schema_version": 1,
    }


def rename_finish_reason_to_stop_reason(data: MessageDict) -> MessageDict:
    """The v1 -> v2 step under test: v2 renamed metadata.finish_reason to metadata.stop_reason."""
    metadata = data["metadata"]
    if "finish_reason" in metadata:
        metadata["stop_reason"] = metadata.pop("finish_reason")
    return data


V2_MIGRATIONS = {1: rename_finish_reason_to_stop_reason}


def test_the_current_schema_is_version_2_with_one_migration_from_v1() -> None:
    assert SCHEMA_VERSION == 2
    assert sorted(MESSAGE_MIGRATIONS) == [1]


def test_reading_a_v1_dict_at_v2_runs_the_migration() -> None:
    original = v1_assistant_dict()
    migrated = migrate_message_dict(original, target=2, migrations=V2_MIGRATIONS)
    assert migrated["schema_version"] == 2
    assert migrated["metadata"]["stop_reason"] == "end_turn"
    assert "finish_reason" not in migrated["metadata"]
    assert original == v1_assistant_dict(), "the caller's dict is left untouched"


def test_after_the_schema_moves_to_v2_a_stored_v1_message_loads_migrated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(message_module, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(MESSAGE_MIGRATIONS, 1, rename_finish_reason_to_stop_reason)
    stored = orjson.dumps(v1_assistant_dict())

    message = Message.from_json(stored)

    assert message.schema_version == 2
    assert message.metadata.stop_reason == "end_turn"
    assert "finish_reason" not in (message.metadata.model_extra or {})
    assert message.text() == "hello"
    assert message.metadata.usage is not None and str(message.metadata.usage.cost_usd) == "0.00006"


def test_a_message_already_at_the_target_is_returned_unchanged() -> None:
    data = v1_assistant_dict()
    assert migrate_message_dict(copy.deepcopy(data), target=1, migrations=V2_MIGRATIONS) == data


def test_migrations_run_in_order_across_several_versions() -> None:
    steps: list[int] = []

    def step(version: int) -> Any:
        def apply(data: MessageDict) -> MessageDict:
            steps.append(version)
            data["metadata"][f"seen_v{version}"] = True
            return data

        return apply

    migrated = migrate_message_dict(v1_assistant_dict(), target=4, migrations={v: step(v) for v in (3, 1, 2)})
    assert steps == [1, 2, 3]
    assert migrated["schema_version"] == 4


def test_a_missing_migration_step_raises_schema_migration_error() -> None:
    with pytest.raises(SchemaMigrationError, match="no migration from message schema v2 to v3"):
        migrate_message_dict(v1_assistant_dict(), target=3, migrations=V2_MIGRATIONS)


def test_a_message_without_schema_version_is_treated_as_v1() -> None:
    data = v1_assistant_dict()
    del data["schema_version"]
    assert migrate_message_dict(data, target=2, migrations=V2_MIGRATIONS)["schema_version"] == 2


def test_a_message_from_a_newer_schema_is_read_best_effort_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    data = v1_assistant_dict()
    data["schema_version"] = 7
    data["metadata"]["stop_reason"] = data["metadata"].pop("finish_reason")
    with caplog.at_level(logging.WARNING, logger="metis_core.messages"):
        message = Message.from_json(orjson.dumps(data))
    assert message.schema_version == 7
    assert message.text() == "hello"
    assert any("newer than 2" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_an_unknown_block_type_is_skipped_with_a_warning_and_the_message_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    data = v1_assistant_dict()
    data["content"].insert(0, {"type": "audio", "data": "UklGR...", "media_type": "audio/wav"})
    with caplog.at_level(logging.WARNING, logger="metis_core.messages"):
        message = Message.from_json(orjson.dumps(data))
    assert message.role is Role.ASSISTANT
    assert [b.type for b in message.content] == ["text"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'audio'" in r.getMessage() for r in warnings)


def test_unknown_metadata_fields_are_kept_through_a_round_trip() -> None:
    data = v1_assistant_dict()
    data["metadata"]["carbon_grams"] = 0.4
    data["metadata"]["review"] = {"by": "u_1", "ok": True}
    message = Message.from_json(orjson.dumps(data))
    assert message.metadata.model_extra == {
        "finish_reason": "end_turn",
        "carbon_grams": 0.4,
        "review": {"by": "u_1", "ok": True},
    }
    again = orjson.loads(message.to_json())
    assert again["metadata"]["carbon_grams"] == 0.4
    assert again["metadata"]["review"] == {"by": "u_1", "ok": True}


def test_v1_to_v2_removes_the_phantom_tool_use_a_v1_stream_made_of_a_server_tool() -> None:
    data = v1_assistant_dict()
    data["content"] = [
        {"type": "tool_use", "id": "tu_01HZ00000000000000000000AA", "name": "", "input": {"query": "news"}},
        {"type": "text", "text": "hello"},
        {"type": "tool_use", "id": "tu_01HZ00000000000000000000AB", "name": "lookup", "input": {}},
    ]
    message = Message.from_json(orjson.dumps(data))
    assert message.schema_version == SCHEMA_VERSION == 2
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.tool_uses()[0].name == "lookup"
    assert (message.metadata.provider_raw or {})["migrated_v2_dropped_tool_uses"] == 1


def test_v1_to_v2_leaves_well_formed_messages_and_their_hash_unchanged() -> None:
    data = v1_assistant_dict()
    v1 = Message.model_validate(data | {"schema_version": 2})
    migrated = Message.from_json(orjson.dumps(data))
    assert migrated.content == v1.content
    assert migrated.content_hash() == v1.content_hash()
    assert migrated.metadata.provider_raw is None


def test_v1_to_v2_keeps_a_message_valid_when_its_only_block_was_phantom() -> None:
    data = v1_assistant_dict()
    data["content"] = [{"type": "tool_use", "id": "tu_01HZ00000000000000000000AA", "name": "", "input": {}}]
    message = Message.from_json(orjson.dumps(data))
    assert [b.type for b in message.content] == ["text"]
