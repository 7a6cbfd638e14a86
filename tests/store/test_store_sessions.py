"""SessionStore: round trips, tool-call bookkeeping, totals, listing, search, export/import."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from session_samples import assistant, full_conversation, simple_exchange, tool_result

from metis_core.errors import (
    SessionExistsError,
    SessionInvariantError,
    SessionNotFoundError,
    StoreError,
)
from metis_core.ids import new_tool_use_id
from metis_core.messages import Message, MessageMetadata, MessageStatus, TextBlock, ToolUseBlock, user_message
from metis_core.store import UNSET, SessionStore, ToolCallStatus, default_db_path


@pytest.fixture
def store(db_location: Path | str) -> SessionStore:
    s = SessionStore(db_location)
    yield s
    s.close()


def test_default_database_lives_in_metis_home(_isolated_home: Path) -> None:
    with SessionStore() as s:
        assert s.path == _isolated_home / "metis.db"
    assert default_db_path() == _isolated_home / "metis.db"
    assert (_isolated_home / "metis.db").is_file()


def test_every_block_type_reloads_equal_in_a_new_store(tmp_path: Path, db_location: Path | str) -> None:
    db = db_location
    with SessionStore(db) as s:
        session = s.create_session(tmp_path, active_model="anthropic:claude-sonnet-4-6")
        messages, _ = full_conversation(session.id)
        for m in messages:
            s.append_message(m)
    with SessionStore(db) as s:
        loaded = s.load_messages(session.id)
    assert loaded == messages
    assert loaded[2].thinking()[0].origin is not None
    assert loaded[2].metadata.usage is not None and loaded[2].metadata.usage.cost_usd == Decimal("0.0123")
    assert loaded[2].metadata.model_extra == {"custom_future_field": {"x": 1}}
    assert loaded[0].created_at == messages[0].created_at  # microseconds survive


def test_tool_calls_go_pending_then_succeeded_or_failed(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    messages, (tu_ok, tu_err) = full_conversation(session.id)
    for m in messages[:3]:
        store.append_message(m, provider_ids={tu_ok: "toolu_A", tu_err: "toolu_B"} if m is messages[2] else None)
    calls = {c.id: c for c in store.tool_calls(session.id)}
    assert {c.status for c in calls.values()} == {ToolCallStatus.PENDING}
    assert calls[tu_ok].provider == "anthropic" and calls[tu_ok].provider_id == "toolu_A"
    assert calls[tu_ok].message_id == messages[2].id and calls[tu_ok].completed_at is None
    assert store.get_session(session.id).tool_id_map == {
        tu_ok: {"anthropic": "toolu_A"},
        tu_err: {"anthropic": "toolu_B"},
    }
    store.append_message(messages[3])
    store.append_message(messages[4])
    calls = {c.id: c for c in store.tool_calls(session.id)}
    assert calls[tu_ok].status is ToolCallStatus.SUCCEEDED
    assert calls[tu_ok].result_message_id == messages[3].id
    assert calls[tu_ok].completed_at == messages[3].created_at
    assert calls[tu_err].status is ToolCallStatus.FAILED
    assert store.tool_calls(session.id, ToolCallStatus.PENDING) == []


def test_cancelled_assistant_message_records_cancelled_calls(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    tu = new_tool_use_id()
    cancelled = Message(
        role="assistant",
        session_id=session.id,
        content=[ToolUseBlock(id=tu, name="run", input={})],
        metadata=MessageMetadata(status=MessageStatus.CANCELLED),
    )
    store.append_message(cancelled)
    assert [c.status for c in store.tool_calls(session.id)] == [ToolCallStatus.CANCELLED]
    store.append_message(tool_result(session.id, tu, "cancelled by user", is_error=True))
    (call,) = store.tool_calls(session.id)
    assert call.status is ToolCallStatus.CANCELLED and call.result_message_id is not None


def test_cancel_pending_tool_calls_marks_only_pending(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    messages, (tu_ok, tu_err) = full_conversation(session.id)
    for m in messages[:4]:
        store.append_message(m)
    assert store.cancel_pending_tool_calls(session.id) == 1
    statuses = {c.id: c.status for c in store.tool_calls(session.id)}
    assert statuses == {tu_ok: ToolCallStatus.SUCCEEDED, tu_err: ToolCallStatus.CANCELLED}


def test_tool_result_without_matching_tool_use_is_rejected_and_not_stored(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    with pytest.raises(SessionInvariantError, match="no tool_use in this session"):
        store.append_message(tool_result(session.id, new_tool_use_id(), "orphan"))
    assert store.load_messages(session.id) == []


def test_tool_use_answered_twice_is_rejected(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    messages, (tu_ok, _) = full_conversation(session.id)
    for m in messages[:4]:
        store.append_message(m)
    with pytest.raises(SessionInvariantError, match="already answered"):
        store.append_message(tool_result(session.id, tu_ok, "again"))
    assert store.message_count(session.id) == 4


def test_reused_tool_use_id_rolls_back_the_whole_message(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    tu = new_tool_use_id()
    store.append_message(assistant(session.id, [ToolUseBlock(id=tu, name="a", input={})]))
    before = store.get_session(session.id)
    second = assistant(
        session.id, [ToolUseBlock(id=new_tool_use_id(), name="b", input={}), ToolUseBlock(id=tu, name="a", input={})]
    )
    with pytest.raises(SessionInvariantError, match="already used"):
        store.append_message(second)
    assert store.message_count(session.id) == 1
    assert len(store.tool_calls(session.id)) == 1
    assert store.get_session(session.id).total_cost_usd == before.total_cost_usd


def test_appending_to_an_unknown_session_is_refused(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError, match="create_session"):
        store.append_message(user_message("hi", session_id="sess_nope"))
    with pytest.raises(StoreError, match="no session_id"):
        store.append_message(user_message("hi"))
    with pytest.raises(SessionNotFoundError):
        store.load_messages("sess_nope")
    with pytest.raises(SessionNotFoundError):
        store.get_session("sess_nope")


def test_message_ids_must_increase_within_a_session(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    early = user_message("first made", session_id=session.id)
    late = user_message("second made", session_id=session.id)
    store.append_message(late)
    with pytest.raises(StoreError, match="does not sort after"):
        store.append_message(early)
    with pytest.raises(StoreError):
        store.append_message(late)


def test_totals_follow_assistant_usage_and_count_unpriced(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    messages, _ = full_conversation(session.id)
    store.append_messages(messages)
    record = store.get_session(session.id)
    totals = store.session_totals(session.id)
    assert record.total_cost_usd == totals.cost_usd == Decimal("0.0123")
    assert record.unpriced_message_count == totals.unpriced_message_count == 1
    assert totals.input_tokens == 150 and totals.cached_input_tokens == 14
    assert record.total_input_tokens == 150 + 14
    assert record.total_output_tokens == totals.output_tokens == 30
    assert totals.message_count == 6 and totals.assistant_message_count == 2
    assert totals.models == ("anthropic:claude-sonnet-4-6",)


def test_answers_are_the_assistant_messages_of_one_session_or_all_since_a_time(store: SessionStore,
                                                                                tmp_path: Path) -> None:
    first, second = store.create_session(tmp_path), store.create_session(tmp_path)
    store.append_messages(full_conversation(first.id)[0])
    store.append_messages(simple_exchange(second.id, 2))
    everything = store.answers()
    assert [m.role.value for m in everything] == ["assistant"] * 4
    assert {m.session_id for m in everything} == {first.id, second.id}
    mine = [m for m in store.load_messages(first.id) if m.role.value == "assistant"]
    assert store.answers(session_id=first.id) == mine
    later = everything[-1].created_at
    assert all(m.created_at >= later for m in store.answers(since=later)) and store.answers(since=later)


def test_append_messages_is_all_or_nothing(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    good = simple_exchange(session.id, 2)
    orphan = tool_result(session.id, new_tool_use_id(), "orphan")
    with pytest.raises(SessionInvariantError):
        store.append_messages([*good, orphan])
    assert store.load_messages(session.id) == []
    assert store.get_session(session.id).total_cost_usd == 0


def test_update_session_changes_only_the_given_fields(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path, active_model="anthropic:a", title="t")
    tu = new_tool_use_id()
    updated = store.update_session(
        session.id, active_model="openai:gpt-5", tool_id_map={tu: {"openai": "call_1"}}, routing_policy={"chain": ["x"]}
    )
    assert updated.active_model == "openai:gpt-5" and updated.title == "t"
    assert updated.tool_id_map == {tu: {"openai": "call_1"}}
    assert updated.routing_policy == {"chain": ["x"]}
    assert updated.updated_at >= session.updated_at
    cleared = store.update_session(session.id, routing_policy=None, title=UNSET)
    assert cleared.routing_policy is None and cleared.title == "t"
    with pytest.raises(StoreError, match="tool_id_map"):
        store.update_session(session.id, tool_id_map={tu: {"openai": 3}})  # type: ignore[dict-item]
    with pytest.raises(SessionNotFoundError):
        store.update_session("sess_nope", title="x")


def test_resumed_session_files_provider_ids_from_its_tool_id_map(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    tu = new_tool_use_id()
    store.update_session(session.id, tool_id_map={tu: {"openai": "call_9"}})
    store.append_message(assistant(session.id, [ToolUseBlock(id=tu, name="x", input={})], provider="openai"))
    (call,) = store.tool_calls(session.id)
    assert (call.provider, call.provider_id) == ("openai", "call_9")


def test_end_session_records_disposition(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    ended = store.end_session(session.id, "abandoned")
    assert ended.disposition == "abandoned" and ended.ended_at is not None


def test_idle_sessions_are_the_open_untouched_ones_and_each_is_ended_once(store: SessionStore, tmp_path: Path) -> None:
    idle = store.create_session(tmp_path)
    touched = store.create_session(tmp_path)
    closed = store.end_session(store.create_session(tmp_path).id)
    call = store.create_session("gateway:gk_0123")  # one gateway request: never swept
    cutoff = datetime.now(UTC) + timedelta(microseconds=1)
    assert {r.id for r in store.idle_sessions(cutoff)} == {idle.id, touched.id}
    assert call.id not in {r.id for r in store.idle_sessions(cutoff)} and closed.ended_at is not None

    store.update_session(touched.id, title="used again")  # after the sweep read it: no longer idle
    assert not store.end_if_idle(touched.id, cutoff)
    assert store.end_if_idle(idle.id, cutoff)
    assert not store.end_if_idle(idle.id, cutoff)  # a second sweeper finds it ended
    assert store.get_session(idle.id).disposition == "abandoned"
    assert store.get_session(touched.id).ended_at is None
    assert store.idle_sessions(cutoff) == []
    assert store.idle_sessions(datetime.now(UTC) + timedelta(seconds=1), limit=1)[0].id == touched.id


def test_create_session_refuses_an_existing_id(store: SessionStore, tmp_path: Path) -> None:
    store.create_session(tmp_path, session_id="sess_fixed")
    with pytest.raises(SessionExistsError):
        store.create_session(tmp_path, session_id="sess_fixed")


def test_list_sessions_newest_first_with_limit_and_workspace(store: SessionStore, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = store.create_session(tmp_path / "a")
    second = store.create_session(tmp_path / "b")
    third = store.create_session(tmp_path / "a")
    store.append_message(user_message("bump", session_id=first.id))
    assert [s.id for s in store.list_sessions()] == [first.id, third.id, second.id]
    assert [s.id for s in store.list_sessions(limit=1)] == [first.id]
    assert [s.id for s in store.list_sessions(workspace=tmp_path / "a")] == [first.id, third.id]
    assert store.list_sessions(workspace=tmp_path / "none") == []


def test_search_finds_message_text_and_titles_not_json_keys(store: SessionStore, tmp_path: Path) -> None:
    one = store.create_session(tmp_path, title="Refactor the parser")
    two = store.create_session(tmp_path)
    store.append_message(user_message("Where is the BILLING module?", session_id=two.id))
    store.append_message(user_message("100% sure", session_id=one.id))
    assert [s.id for s in store.search_sessions("billing")] == [two.id]
    assert [s.id for s in store.search_sessions("PARSER")] == [one.id]
    assert [s.id for s in store.search_sessions("100%")] == [one.id]
    assert store.search_sessions("0%s") == []  # % is literal, not a wildcard
    assert store.search_sessions("type") == []  # JSON keys are not message text
    assert store.search_sessions("nothing like this") == []


def test_export_is_json_and_imports_equal_into_another_database(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "one.db") as source:
        session = source.create_session(tmp_path, active_model="anthropic:x", title="T")
        messages, (tu_ok, _) = full_conversation(session.id)
        source.append_message(messages[0])
        source.append_message(messages[1])
        source.append_message(messages[2], provider_ids={tu_ok: "toolu_1"})
        source.append_messages(messages[3:])
        exported = json.loads(json.dumps(source.export_session(session.id)))
        original = source.get_session(session.id)
    with SessionStore(tmp_path / "two.db") as target:
        imported = target.import_session(exported)
        assert target.load_messages(session.id) == messages
        assert imported.tool_id_map == original.tool_id_map
        assert (imported.title, imported.active_model, imported.created_at) == ("T", "anthropic:x", original.created_at)
        assert imported.total_cost_usd == original.total_cost_usd
        calls = {c.id: c for c in target.tool_calls(session.id)}
        assert calls[tu_ok].provider_id == "toolu_1" and calls[tu_ok].status is ToolCallStatus.SUCCEEDED


def test_import_refuses_an_existing_id_unless_a_new_session_is_asked(store: SessionStore, tmp_path: Path) -> None:
    session = store.create_session(tmp_path)
    messages, _ = full_conversation(session.id)
    store.append_messages(messages)
    exported = store.export_session(session.id)
    with pytest.raises(SessionExistsError):
        store.import_session(exported)
    copy = store.import_session(exported, as_new_session=True)
    assert copy.id != session.id
    copied = store.load_messages(copy.id)
    assert [m.content_hash() for m in copied[:2]] == [m.content_hash() for m in messages[:2]]
    assert {m.id for m in copied}.isdisjoint({m.id for m in messages})
    new_uses = {b.id for m in copied for b in m.tool_uses()}
    assert new_uses.isdisjoint({b.id for m in messages for b in m.tool_uses()})
    assert {c.status for c in store.tool_calls(copy.id)} == {ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED}
    assert store.load_messages(session.id) == messages


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(format="other"),
        lambda d: d.update(format_version=99),
        lambda d: d.pop("session"),
        lambda d: d["session"].pop("workspace_path"),
        lambda d: d["messages"].append("not an object"),
        lambda d: d["messages"][0].update(role="wizard"),
        lambda d: d["messages"][0].update(session_id="sess_other"),
    ],
)
def test_malformed_export_is_refused_without_writing(store: SessionStore, tmp_path: Path, mutate) -> None:
    session = store.create_session(tmp_path)
    store.append_messages(simple_exchange(session.id, 1))
    exported = json.loads(json.dumps(store.export_session(session.id)))
    mutate(exported)
    with SessionStore(tmp_path / "fresh.db") as fresh:
        with pytest.raises(StoreError, match="cannot import session"):
            fresh.import_session(exported)
        assert fresh.list_sessions() == []


def test_messages_from_an_older_message_schema_are_migrated_on_load(
    store: SessionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = store.create_session(tmp_path)
    store.append_message(user_message("hello", session_id=session.id))
    with store._lock:
        store._db.execute("UPDATE messages SET schema_version = 0")
    monkeypatch.setitem(
        __import__("metis_core.messages.migrations", fromlist=["x"]).MESSAGE_MIGRATIONS,
        0,
        lambda d: {**d, "content": [TextBlock(text="migrated").model_dump()]},
    )
    (loaded,) = store.load_messages(session.id)
    assert loaded.text() == "migrated" and loaded.schema_version == 2  # v0 -> v1 (test step) -> v2


def test_a_replay_session_names_its_source_and_the_source_lists_its_replays(
    store: SessionStore, tmp_path: Path
) -> None:
    source = store.create_session(tmp_path)
    first = store.create_session(tmp_path, replay_of=source.id)
    second = store.create_session(tmp_path, replay_of=source.id)
    assert store.get_session(first.id).replay_of == source.id
    assert source.replay_of is None and source.to_json_dict()["replay_of"] is None
    assert [r.id for r in store.replays_of(source.id)] == [first.id, second.id]
    assert store.replays_of(first.id) == []
    assert store.export_session(first.id)["session"]["replay_of"] == source.id


def test_the_replay_link_survives_export_and_import(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "a.db") as a:
        source = a.create_session(tmp_path)
        replay = a.create_session(tmp_path, replay_of=source.id)
        a.append_message(user_message("again", session_id=replay.id))
        document = a.export_session(replay.id)
    with SessionStore(tmp_path / "b.db") as b:
        assert b.import_session(document).replay_of == source.id
        copy = b.import_session(document, as_new_session=True)
        assert copy.id != replay.id and copy.replay_of == source.id
        assert [r.id for r in b.replays_of(source.id)] == [replay.id, copy.id]


def test_answering_models_are_each_sessions_last_answer(store: SessionStore, tmp_path: Path) -> None:
    swapped, silent = store.create_session(tmp_path), store.create_session(tmp_path)
    store.append_messages([user_message("hi", session_id=swapped.id),
                           assistant(swapped.id, [TextBlock(text="a")]),
                           user_message("again", session_id=swapped.id),
                           assistant(swapped.id, [TextBlock(text="b")], provider="openai")])
    store.append_message(user_message("hi", session_id=silent.id))
    assert store.answering_models([swapped.id, silent.id]) == {swapped.id: "openai:gpt-5"}
    assert store.answering_models([]) == {}


def test_a_message_standing_for_several_calls_counts_each_in_the_totals(
    store: SessionStore, tmp_path: Path
) -> None:
    from metis_core.messages import Usage
    from metis_core.messages.call_spend import CallSpend

    session = store.create_session(tmp_path)
    asked = user_message("Two numbers", session_id=session.id)
    spend = CallSpend()
    for cost in (Decimal("0.001"), None, Decimal("0.002")):  # a structured run's three attempts, one unpriced
        spend.add(Usage(input_tokens=10, output_tokens=5, cost_usd=cost))
    answer = assistant(session.id, [TextBlock(text="[1, 2]")])
    spend.stamp(answer)
    store.append_messages([asked, answer])
    record, totals = store.get_session(session.id), store.session_totals(session.id)
    assert record.total_cost_usd == totals.cost_usd == Decimal("0.003")
    assert record.unpriced_message_count == totals.unpriced_message_count == 1
    assert totals.model_calls == 3 and record.total_input_tokens == totals.input_tokens == 30


def test_answering_models_names_each_sessions_last_answer(store: SessionStore, tmp_path: Path) -> None:
    two, none = store.create_session(tmp_path), store.create_session(tmp_path)
    store.append_message(user_message("q", session_id=two.id))
    store.append_message(assistant(two.id, [TextBlock(text="first")], provider="anthropic"))
    store.append_message(user_message("q2", session_id=two.id))
    store.append_message(assistant(two.id, [TextBlock(text="second")], provider="openai"))
    store.append_message(user_message("unanswered", session_id=none.id))
    assert store.answering_models([two.id, none.id]) == {two.id: "openai:gpt-5"}
    assert store.answering_models([]) == {}
