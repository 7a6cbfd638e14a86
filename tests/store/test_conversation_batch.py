"""`store_conversations` writes a batch of new sessions as prepared rows, and the result equals the checked path's."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest
from session_samples import assistant, full_conversation, simple_exchange, tool_result

from metis_core.errors import SessionInvariantError
from metis_core.ids import new_session_id, new_tool_use_id
from metis_core.messages import MessageStatus, TextBlock, ToolUseBlock, user_message
from metis_core.store import SessionStore, conversation_batch
from metis_core.store.sessions import StoredConversation


def _batch() -> list[StoredConversation]:
    first, second, third = new_session_id(), new_session_id(), new_session_id()
    messages, _ = full_conversation(first)
    cancelled_use = new_tool_use_id()
    asked = user_message("go", session_id=third)
    cancelled = assistant(third, [TextBlock(text="let me"), ToolUseBlock(id=cancelled_use, name="ls", input={})])
    cancelled.metadata.status = MessageStatus.CANCELLED
    return [
        StoredConversation("gateway:gk_a", first, messages, active_model="anthropic:claude-sonnet-4-6", title="one",
                           tool_id_map={messages[2].content[3].id: {"anthropic": "toolu_01"}}, stamp_us=10),
        StoredConversation("gateway:gk_a", second, simple_exchange(second, 3), title="two", stamp_us=11),
        StoredConversation("gateway:gk_b", third, [asked, cancelled,
                                                    tool_result(third, cancelled_use, "late")], stamp_us=12),
        StoredConversation("gateway:gk_b", new_session_id(), [], title="no answer", stamp_us=13),
    ]


def _snapshot(store: SessionStore, items: list[StoredConversation]) -> list[object]:
    found: list[object] = []
    for item in items:
        record = store.get_session(item.session_id).to_json_dict()
        record.pop("updated_at")
        found.append(record)
        found.append([m.model_dump(mode="json") for m in store.load_messages(item.session_id)])
        found.append(sorted(str(call) for call in store.tool_calls(item.session_id)))
    return found


def test_prepared_rows_store_what_the_checked_path_stores(db_location: Path | str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    items = _batch()
    fast = SessionStore(db_location)
    checked = SessionStore(tmp_path / "checked.db")
    try:
        assert fast.store_conversations(items) == []
        with monkeypatch.context() as patch:
            patch.setattr(conversation_batch, "conversation_rows", lambda *args: None)
            assert checked.store_conversations(items) == []
        assert _snapshot(fast, items) == _snapshot(checked, items)
        totals = fast.get_session(items[0].session_id)
        assert totals.total_cost_usd == Decimal("0.0123") and totals.unpriced_message_count == 1
        answers = [m.metadata.usage for m in items[0].messages if m.metadata.usage is not None]
        assert totals.total_input_tokens == sum(u.total_input_tokens for u in answers) > 0
        assert totals.total_output_tokens == sum(u.output_tokens for u in answers) == 30
        # a gateway key's label is its workspace as written, not a folder under the server's cwd
        assert {fast.get_session(i.session_id).workspace_path for i in items} == {"gateway:gk_a", "gateway:gk_b"}
        assert {s.id for s in fast.list_sessions(workspace="gateway:gk_b")} == {i.session_id for i in items[2:]}
    finally:
        fast.close()
        checked.close()


def test_a_batch_is_a_few_multi_row_statements_and_one_commit_not_statements_per_message(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "metis.db")
    items = [StoredConversation("gateway:k", sid, simple_exchange(sid, 2)) for sid in
             (new_session_id() for _ in range(20))]
    statements: list[str] = []
    conn: sqlite3.Connection = store._db.conn  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)
    try:
        assert store.store_conversations(items) == []
    finally:
        conn.set_trace_callback(None)
        store.close()
    inserts = [s for s in statements if s.startswith("INSERT")]
    # 20 sessions as 16 + 4 rows, 80 messages as 64 + 16 rows: one step per statement, not per row
    assert [s.count("), (") + 1 for s in inserts] == [16, 4, 64, 16]
    assert not [s for s in statements if s.startswith(("SELECT", "UPDATE", "SAVEPOINT"))]
    assert [s for s in statements if s in ("BEGIN IMMEDIATE", "COMMIT")] == ["BEGIN IMMEDIATE", "COMMIT"]


def test_a_conversation_the_checks_refuse_takes_the_checked_path_and_only_it_is_refused(
    db_location: Path | str,
) -> None:
    store = SessionStore(db_location)
    good, bad = new_session_id(), new_session_id()
    items = [StoredConversation("gateway:k", good, simple_exchange(good, 1)),
             StoredConversation("gateway:k", bad, [user_message("hi", session_id=bad),
                                                   tool_result(bad, new_tool_use_id(), "answers nothing")])]
    try:
        refused = store.store_conversations(items)
        assert [sid for sid, _ in refused] == [bad]
        assert isinstance(refused[0][1], SessionInvariantError)
        assert len(store.load_messages(good)) == 2
        assert [s.id for s in store.list_sessions()] == [good]
    finally:
        store.close()


def test_a_taken_session_id_rolls_the_prepared_batch_back_and_only_that_call_is_refused(
    db_location: Path | str,
) -> None:
    store = SessionStore(db_location)
    taken, fresh = new_session_id(), new_session_id()
    try:
        store.store_conversations([StoredConversation("gateway:k", taken, simple_exchange(taken, 1))])
        refused = store.store_conversations([StoredConversation("gateway:k", fresh, simple_exchange(fresh, 1)),
                                             StoredConversation("gateway:k", taken, [])])
        assert [sid for sid, _ in refused] == [taken]
        assert len(store.load_messages(fresh)) == 2 and len(store.load_messages(taken)) == 2
    finally:
        store.close()
