"""Schema migrations from every earlier version, and the files metis refuses to open."""

from __future__ import annotations

import os
import sqlite3
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from session_samples import full_conversation

from metis_core.errors import (
    CorruptDatabaseError,
    DatabaseLockedError,
    SchemaVersionError,
    StorageFullError,
    StoreError,
)
from metis_core.messages import user_message
from metis_core.store import SCHEMA_VERSION, SessionStore
from metis_core.store import db as db_module
from metis_core.store.db import connect
from metis_core.store.message_rows import message_row
from metis_core.store.migrations import MIGRATIONS, migrate, user_version
from metis_core.trace import TraceStore


def _build_file_at(path: Path, version: int) -> None:
    conn = connect(path)
    assert migrate(conn, path, up_to=version) == version
    conn.close()


def _insert_v1_rows(path: Path, session_id: str, messages: list, provider_ids: dict[str, str]) -> None:
    """What a v1 metis wrote: the §9.1 columns only, tool_calls rows with provider ids."""
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO sessions (id, workspace_path, active_model, routing_policy_json, schema_version, "
        "created_at, updated_at) VALUES (?, '/w', 'anthropic:x', '{\"rule\": 1}', 1, 1000, 2000)",
        (session_id,),
    )
    for m in messages:
        conn.execute("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?)", message_row(m))
        for block in m.tool_uses():
            conn.execute(
                "INSERT INTO tool_calls (id, session_id, message_id, name, status, provider_id, provider, "
                "created_at) VALUES (?, ?, ?, ?, 'pending', ?, 'anthropic', 1)",
                (block.id, session_id, m.id, block.name, provider_ids.get(block.id)),
            )
    conn.commit()
    conn.close()


@pytest.mark.parametrize("start_version", range(1, SCHEMA_VERSION))
def test_a_file_from_every_earlier_version_upgrades_with_data_intact(tmp_path: Path, start_version: int) -> None:
    db = tmp_path / "metis.db"
    _build_file_at(db, start_version)
    messages, (tu_ok, _tu_err) = full_conversation("sess_old")
    _insert_v1_rows(db, "sess_old", messages, {tu_ok: "toolu_A"})
    if start_version >= 2:  # a v2 writer also kept the running totals and the map
        conn = sqlite3.connect(db)
        conn.execute(
            "UPDATE sessions SET total_cost_usd = '0.0123', unpriced_message_count = 1, "
            "total_input_tokens = 164, total_output_tokens = 30, "
            "tool_id_map_json = ? WHERE id = 'sess_old'",
            (orjson.dumps({tu_ok: {"anthropic": "toolu_A"}}).decode(),),
        )
        conn.commit()
        conn.close()

    with SessionStore(db) as store:
        assert user_version(store._db.conn) == SCHEMA_VERSION
        assert store.load_messages("sess_old") == messages
        record = store.get_session("sess_old")
        assert record.routing_policy == {"rule": 1}
        assert record.tool_id_map == {tu_ok: {"anthropic": "toolu_A"}}
        assert record.total_cost_usd == Decimal("0.0123") and record.unpriced_message_count == 1
        assert (record.total_input_tokens, record.total_output_tokens) == (164, 30)
        assert record.replay_of is None
        applied = store._db.conn.execute("SELECT version, name, applied_at FROM schema_migrations").fetchall()
        assert [v for v, _, _ in applied] == list(range(1, SCHEMA_VERSION + 1))
        assert all(at > 0 for _, _, at in applied)
        store.append_message(user_message("continued after upgrade", session_id="sess_old"))
        assert len(store.load_messages("sess_old")) == len(messages) + 1
        replay = store.create_session("/w", replay_of="sess_old")  # step 7's column is writable
        assert [r.id for r in store.replays_of("sess_old")] == [replay.id]
    with TraceStore(db) as trace:  # the v3 trace bookkeeping is there too
        assert trace.detect_gaps() == []


@pytest.mark.parametrize("start_version", range(1, 7))
def test_replay_sessions_of_a_file_before_step_7_are_linked_from_their_titles(
    tmp_path: Path, start_version: int
) -> None:
    """Before step 7 `metis replay` titled its session `replay of <source> on <model>` and stored no link."""
    db = tmp_path / "metis.db"
    _build_file_at(db, start_version)
    source, replay, renamed, itself = (f"sess_01JD{n}F5Q8ZK3X1V2W4Y6T7R9M0" for n in "ABCD")
    title_column = start_version >= 2  # titles arrived with step 2
    conn = sqlite3.connect(db)
    for sid, title in ((source, "weather bot #billing"), (replay, f"replay of {source} on openai:gpt-4o"),
                       (renamed, "replay of my notes on Tuesday"), (itself, f"replay of {itself} on x")):
        conn.execute(
            "INSERT INTO sessions (id, workspace_path, schema_version, created_at, updated_at) "
            "VALUES (?, '/w', 1, 1000, 2000)", (sid,))
        if title_column:
            conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, sid))
    conn.commit()
    conn.close()
    with SessionStore(db) as store:
        assert [r.id for r in store.replays_of(source)] == ([replay] if title_column else [])
        assert store.get_session(renamed).replay_of is None, "a title that names no session id is not a link"
        assert store.get_session(source).replay_of is None
        assert store.get_session(itself).replay_of is None, "a session is never a replay of itself"


def test_a_fresh_file_is_stamped_with_every_step(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "metis.db") as store:
        assert user_version(store._db.conn) == SCHEMA_VERSION == len(MIGRATIONS)
        names = [n for (n,) in store._db.conn.execute("SELECT name FROM schema_migrations ORDER BY version")]
        assert names == [name for name, _ in MIGRATIONS]
        mode = store._db.conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = store._db.conn.execute("PRAGMA synchronous").fetchone()[0]
        assert (mode, sync) == ("wal", 1)  # 1 = NORMAL
        indexes = {n for (n,) in store._db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {
            "idx_events_session_id",
            "idx_events_type_timestamp",
            "idx_events_turn",
            "idx_events_parent",
            "idx_events_timestamp_us",
            "idx_sessions_parent",
            "idx_sessions_replay_of",
        } <= indexes


def test_reopening_applies_nothing_twice(tmp_path: Path) -> None:
    db = tmp_path / "metis.db"
    SessionStore(db).close()
    with SessionStore(db) as store:
        (count,) = store._db.conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()
        assert count == SCHEMA_VERSION


def test_a_file_from_a_newer_metis_is_refused_naming_both_versions(tmp_path: Path) -> None:
    db = tmp_path / "metis.db"
    SessionStore(db).close()
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaVersionError, match=rf"version {SCHEMA_VERSION + 1}.*\({SCHEMA_VERSION}\)"):
        SessionStore(db)


def test_a_foreign_sqlite_file_is_not_a_metis_database(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(CorruptDatabaseError, match=r"shop\.db is not a metis database.*customers"):
        SessionStore(db)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    with pytest.raises(CorruptDatabaseError, match="no schema_migrations"):
        TraceStore(db)


def test_random_bytes_are_a_corrupt_database_named_and_left_untouched(tmp_path: Path) -> None:
    db = tmp_path / "metis.db"
    junk = os.urandom(8192)
    db.write_bytes(junk)
    with pytest.raises(CorruptDatabaseError, match=rf"{db}.*restore it from a backup"):
        SessionStore(db)
    assert db.read_bytes() == junk


def test_a_directory_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "home"
    blocker.write_text("a file, not a directory")
    with pytest.raises(StoreError, match=r"home/metis\.db"):
        SessionStore(blocker / "metis.db")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions; covered by the disk-full test")
def test_a_read_only_directory_is_storage_error_and_writes_nothing(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(StorageFullError, match="writable"):
            SessionStore(ro / "metis.db")
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


def test_a_full_disk_is_storage_full_and_leaves_nothing_half_written(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "metis.db") as store:
        session = store.create_session(tmp_path)
        messages, _ = full_conversation(session.id)
        store.append_messages(messages[:2])
        (pages,) = store._db.conn.execute("PRAGMA page_count").fetchone()
        store._db.conn.execute(f"PRAGMA max_page_count = {pages}")  # the "disk" is now full
        big = user_message("x" * 200_000, session_id=session.id)
        with pytest.raises(StorageFullError, match="no space left to write"):
            store.append_message(big)
        store._db.conn.execute("PRAGMA max_page_count = 1073741823")
        assert store.load_messages(session.id) == messages[:2]
        assert store._db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_held_write_lock_becomes_database_locked_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "metis.db"
    monkeypatch.setattr(db_module, "BUSY_TIMEOUT_SECONDS", 0.2)
    with SessionStore(db) as store:
        session = store.create_session(tmp_path)
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(DatabaseLockedError, match=rf"another metis process holds {db}"):
                store.append_message(user_message("blocked", session_id=session.id))
        finally:
            other.execute("ROLLBACK")
            other.close()
        store.append_message(user_message("fine now", session_id=session.id))
        assert store.message_count(session.id) == 1
