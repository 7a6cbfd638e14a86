"""PostgreSQL-only operations: pg_dump/pg_restore backups, a lost connection, batched trace writes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from store_backends import execute_on, scalar_on
from trace_samples import chain, event

from metis_core.errors import BackupError, DatabaseConnectionError, StoreError
from metis_core.events.bus import EventBus
from metis_core.store import SessionStore
from metis_core.trace import TraceStore, backup, restore


def test_backup_and_restore_use_pg_dump_and_pg_restore(tmp_path: Path, postgres_url: str) -> None:
    with TraceStore(postgres_url) as store:
        store.append_many(chain("sess_a", 30))
    dump_file = tmp_path / "metis.dump"
    result = backup(postgres_url, dump_file)
    assert result.event_count == 30 and result.bytes == dump_file.stat().st_size
    assert dump_file.read_bytes().startswith(b"PGDMP")  # pg_dump's custom format
    with pytest.raises(BackupError, match="already exists"):
        backup(postgres_url, dump_file)
    with TraceStore(postgres_url) as store:
        store.append_many(chain("sess_b", 5))
    with pytest.raises(BackupError, match="holds data"):
        restore(dump_file, postgres_url)
    restored = restore(dump_file, postgres_url, allow_overwrite=True)
    assert restored.event_count == 30
    assert scalar_on(postgres_url, "SELECT COUNT(*) FROM events WHERE session_id = 'sess_b'") == 0


def test_a_file_that_is_not_a_dump_is_refused(tmp_path: Path, postgres_url: str) -> None:
    bogus = tmp_path / "bogus.dump"
    bogus.write_bytes(b"not a dump")
    with pytest.raises(BackupError, match="pg_restore --list"):
        restore(bogus, postgres_url, allow_overwrite=True)


def _terminate_other_backends(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE datname = current_database() AND pid <> pg_backend_pid()")


def test_a_lost_connection_is_retried_for_reads_and_named_for_transactions(
    tmp_path: Path, postgres_url: str
) -> None:
    with SessionStore(postgres_url) as store:
        session = store.create_session(tmp_path)
        _terminate_other_backends(postgres_url)
        assert store.get_session(session.id).id == session.id  # a read: retried on a fresh connection
        _terminate_other_backends(postgres_url)
        with pytest.raises(DatabaseConnectionError, match="rolled back") as caught, store._db.transaction():
            store._db.execute("UPDATE sessions SET title = 'half' WHERE id = ?", (session.id,))
            _terminate_other_backends(postgres_url)
            store._db.execute("UPDATE sessions SET title = 'written' WHERE id = ?", (session.id,))
        assert isinstance(caught.value, StoreError)
        assert store.get_session(session.id).title is None  # nothing half-written


def test_trace_batches_survive_a_dropped_connection(postgres_url: str) -> None:
    with TraceStore(postgres_url) as store:
        store.append_many(chain("sess_a", 10))
        _terminate_other_backends(postgres_url)
        for e in chain("sess_a", 40):
            store.write_event(e)
        store.flush()
        assert store.count() == 50


def test_the_bus_handler_returns_before_the_network_write(postgres_url: str) -> None:
    with TraceStore(postgres_url, commit_every=10_000, commit_interval=5) as store:
        started = threading.Event()
        original = store._db.transaction

        def slow_transaction():  # type: ignore[no-untyped-def]
            started.set()
            return original()

        store._db.transaction = slow_transaction  # type: ignore[method-assign]
        with EventBus(mode="strict") as bus:
            store.attach(bus)
            chain_ids = chain("sess_bus", 200)
            for e in chain_ids:
                bus.emit(e)
            bus.flush(timeout=5)
        assert not started.is_set()  # nothing written yet: the handler only queued the rows
        store.flush()
        assert [e.id for e in store.replay("sess_bus")] == sorted(e.id for e in chain_ids)
        store.append(event())


_WRITER = """
import sys
from metis_core.events.bus import EventBus
from metis_core.events.catalog import make_event
from metis_core.trace import TraceStore

url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
payload = {"user_message_hash": "h", "estimated_input_tokens": 1, "has_images": False,
           "has_tool_calls_in_history": False}
with TraceStore(url, commit_every=200) as store, EventBus(mode="strict") as bus:
    store.attach(bus)
    parent = None
    for i in range(count):
        event = make_event("turn.started", payload, session_id=f"sess_{name}_{i % 3}", parent=parent)
        bus.emit(event)
        parent = event.id
        print(event.id, flush=False)
    bus.flush(30)
"""


def test_two_writer_processes_keep_every_event_in_session_order_without_gaps(postgres_url: str) -> None:
    import subprocess
    import sys

    TraceStore(postgres_url).close()  # migrate once, as a deployment would with `metis db migrate`
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, postgres_url, name, "3000"], stdout=subprocess.PIPE,
                         text=True)
        for name in ("a", "b")
    ]
    emitted = {}
    for name, writer in zip(("a", "b"), writers, strict=True):
        out, _ = writer.communicate(timeout=120)
        assert writer.returncode == 0
        emitted[name] = out.split()
    with TraceStore(postgres_url) as store:
        for name, ids in emitted.items():
            for k in range(3):
                session = f"sess_{name}_{k}"
                assert [e.id for e in store.replay(session)] == ids[k::3]  # complete, in emit order
        assert store.detect_gaps() == []  # every parent (a chain across sessions) is stored
        missing = emitted["a"][1500]
    execute_on(postgres_url, "DELETE FROM events WHERE id = ?", [(missing,)])
    with TraceStore(postgres_url) as store:
        assert [g.missing_ids for g in store.detect_gaps()] == [(missing,)]
