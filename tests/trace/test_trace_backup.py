"""Backup with VACUUM INTO while writing, and restore with every refusal case."""

from __future__ import annotations

import os
import sqlite3
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from session_samples import full_conversation
from trace_samples import NOW, event

from metis_core.errors import BackupError, CorruptDatabaseError, SchemaVersionError
from metis_core.store import SCHEMA_VERSION, SessionStore
from metis_core.trace import TraceStore, backup, restore


@pytest.fixture
def live_db(tmp_path: Path) -> Path:
    db = tmp_path / "home" / "metis.db"
    with SessionStore(db) as sessions, TraceStore(db) as trace:
        session = sessions.create_session(tmp_path, session_id="sess_keep")
        sessions.append_messages(full_conversation(session.id)[0])
        trace.append_many([event(at=NOW - timedelta(days=3)), event(at=NOW)])
    return db


def test_backup_then_restore_round_trips_sessions_and_events(live_db: Path, tmp_path: Path) -> None:
    result = backup(live_db, tmp_path / "b" / "snap.db")
    assert result.dest.is_file() and result.bytes == result.dest.stat().st_size
    assert (result.schema_version, result.event_count) == (SCHEMA_VERSION, 2)
    assert (result.oldest_event, result.newest_event) == (NOW - timedelta(days=3), NOW)
    assert not Path(f"{result.dest}-wal").exists() and not Path(f"{result.dest}-shm").exists()
    target = tmp_path / "elsewhere" / "metis.db"
    restored = restore(result.dest, target)
    assert restored.event_count == 2
    with SessionStore(target) as sessions, SessionStore(live_db) as original:
        assert len(sessions.load_messages("sess_keep")) == 6
        assert sessions.load_messages("sess_keep") == original.load_messages("sess_keep")


def test_backup_result_is_deterministic(live_db: Path, tmp_path: Path) -> None:
    first = backup(live_db, tmp_path / "one.db")
    second = backup(live_db, tmp_path / "one.db", overwrite=True)
    assert first.lines() == second.lines()


def test_backup_of_a_database_being_written_is_consistent(live_db: Path, tmp_path: Path) -> None:
    stop = threading.Event()

    def write() -> None:
        with TraceStore(live_db) as trace:
            while not stop.is_set():
                trace.append(event())

    writer = threading.Thread(target=write)
    writer.start()
    try:
        results = [backup(live_db, tmp_path / f"hot{i}.db") for i in range(3)]
    finally:
        stop.set()
        writer.join()
    counts = [r.event_count for r in results]
    assert counts == sorted(counts) and counts[-1] > 2
    for r in results:
        conn = sqlite3.connect(r.dest)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()


def test_backup_refuses_to_clobber_or_to_copy_nothing(live_db: Path, tmp_path: Path) -> None:
    dest = tmp_path / "snap.db"
    dest.write_text("precious")
    with pytest.raises(BackupError, match="already exists"):
        backup(live_db, dest)
    assert dest.read_text() == "precious"
    with pytest.raises(BackupError, match="does not exist"):
        backup(tmp_path / "missing.db", tmp_path / "x.db")
    with pytest.raises(BackupError, match="database itself"):
        backup(live_db, live_db, overwrite=True)


def test_restore_refuses_a_backup_of_another_schema_version_naming_both(live_db: Path, tmp_path: Path) -> None:
    snap = backup(live_db, tmp_path / "snap.db").dest
    conn = sqlite3.connect(snap)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.close()
    with pytest.raises(SchemaVersionError, match=rf"version {SCHEMA_VERSION - 1} but this metis uses {SCHEMA_VERSION}"):
        restore(snap, tmp_path / "new.db")
    assert not (tmp_path / "new.db").exists()


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_restore_refuses_a_backup_with_wal_or_shm_beside_it(live_db: Path, tmp_path: Path, suffix: str) -> None:
    snap = backup(live_db, tmp_path / "snap.db").dest
    Path(f"{snap}{suffix}").write_bytes(b"")
    with pytest.raises(BackupError, match=f"snap.db{suffix} sits beside the backup"):
        restore(snap, tmp_path / "new.db")
    assert not (tmp_path / "new.db").exists()


def test_restore_refuses_to_replace_a_database_unless_allowed(live_db: Path, tmp_path: Path) -> None:
    snap = backup(live_db, tmp_path / "snap.db").dest
    with TraceStore(live_db) as trace:
        trace.append(event(session_id="sess_after_backup"))
    with pytest.raises(BackupError, match="--force"):
        restore(snap, live_db)
    with TraceStore(live_db) as trace:
        assert trace.replay("sess_after_backup") != []
    restored = restore(snap, live_db, allow_overwrite=True)
    with TraceStore(live_db) as trace:
        assert trace.replay("sess_after_backup") == [] and trace.count() == 2
    # The work done since the backup is not lost: the replaced database is kept beside it.
    kept = restored.replaced_copy
    assert kept is not None and kept.parent == live_db.parent / "backups" and kept.name.startswith("replaced-")
    assert f"replaced_database_kept_as: {kept}" in restored.lines()
    with TraceStore(kept) as trace:
        assert trace.replay("sess_after_backup") != []


def test_restore_can_replace_a_corrupt_database(live_db: Path, tmp_path: Path) -> None:
    snap = backup(live_db, tmp_path / "snap.db").dest
    broken = tmp_path / "broken" / "metis.db"
    broken.parent.mkdir()
    broken.write_bytes(os.urandom(4096))
    restore(snap, broken, allow_overwrite=True)
    with TraceStore(broken) as trace:
        assert trace.count() == 2


def test_restore_refuses_corrupt_foreign_and_missing_files(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(8192))
    with pytest.raises(CorruptDatabaseError, match=r"junk\.db"):
        restore(junk, tmp_path / "new.db")
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(CorruptDatabaseError, match="not a metis database"):
        restore(foreign, tmp_path / "new.db")
    with pytest.raises(BackupError, match="does not exist"):
        restore(tmp_path / "nope.db", tmp_path / "new.db")
    assert not (tmp_path / "new.db").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files left
