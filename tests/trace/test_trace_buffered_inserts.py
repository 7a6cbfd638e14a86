"""The SQLite trace writer buffers rows and inserts many per statement: the same rows as one INSERT
per event, reads that see what is buffered, and buffered rows kept for another try when refused."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from trace_samples import event

from metis_core.errors import StoreError
from metis_core.store.multi_row_insert import MAX_ROWS, multi_row_inserts
from metis_core.store.records import to_us
from metis_core.trace import TraceStore
from metis_core.trace.event_rows import EVENT_COLUMNS, INSERT_EVENT, event_row


def rows_of(path: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT {EVENT_COLUMNS} FROM events ORDER BY id").fetchall()


@pytest.mark.parametrize("count", [1, 2, 3, 63, 64, 65, 200, 257])
def test_multi_row_inserts_store_the_same_rows_as_one_insert_per_event(tmp_path: Path, count: int) -> None:
    events = [event() for _ in range(count)]
    events.append(events[0])  # a duplicate id: ignored, as a second single INSERT would be
    one_by_one, buffered = tmp_path / "one.db", tmp_path / "many.db"
    TraceStore(one_by_one).close()
    with sqlite3.connect(one_by_one) as conn:
        conn.executemany(INSERT_EVENT, [event_row(e) for e in events])
    with TraceStore(buffered, commit_every=10_000, commit_interval=60) as store:
        for e in events:
            store.write_event(e)
    assert rows_of(buffered) == rows_of(one_by_one)
    assert len(rows_of(buffered)) == count


def test_statements_are_powers_of_two_up_to_the_cap() -> None:
    rows = [event_row(event()) for _ in range(200)]
    statements = list(multi_row_inserts(INSERT_EVENT, rows))
    sizes = [len(params) // 9 for _, params in statements]
    assert sizes == [64, 64, 64, 8]
    assert max(sizes) <= MAX_ROWS
    assert statements[-1][0].count("(?, ?, ?, ?, ?, ?, ?, ?, ?)") == 8
    flattened = [value for _, params in statements for value in params]
    assert flattened == [value for row in rows for value in row]  # order kept


def test_reads_see_rows_still_buffered(tmp_path: Path) -> None:
    with TraceStore(tmp_path / "metis.db", commit_every=10_000, commit_interval=60) as store:
        first, second = event("sess_a"), event("sess_a")
        store.write_event(first)
        store.write_event(second)
        assert store.replay("sess_a") == [first, second]
        assert store.get(second.id) == second
        assert store.count() == 2


def test_rows_the_database_refuses_stay_buffered_and_are_written_on_the_next_commit(tmp_path: Path) -> None:
    path = tmp_path / "metis.db"
    with TraceStore(path, commit_every=10_000, commit_interval=60) as store:
        events = [event() for _ in range(5)]
        for e in events:
            store.write_event(e)
        blocker = sqlite3.connect(path, timeout=0)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the database
        store._db.conn.execute("PRAGMA busy_timeout = 0")
        with pytest.raises(StoreError):
            store.flush()
        blocker.rollback()
        blocker.close()
        store.flush()
    assert [row[0] for row in rows_of(path)] == [e.id for e in events]


def test_a_row_read_from_the_models_storage_holds_what_its_attributes_say() -> None:
    from metis_core.events.envelope import Actor, Event, Sensitivity
    from metis_core.trace.event_rows import event_from_row, payload_json

    built = Event.built(session_id="sess_a", turn_id="t", parent_event_id="p", type="turn.started",
                        actor=Actor.USER, payload={"n": 1.5, "s": "é"}, sensitivity=Sensitivity.PRIVATE)
    for item in (event(), built, Event(session_id="s", type="turn.started", actor="user")):
        expected = (item.id, item.timestamp_us, item.session_id, item.turn_id, item.parent_event_id, item.type,
                    item.actor.value, item.sensitivity.value, payload_json(item.payload))
        assert event_row(item) == expected
        assert event_from_row(event_row(item)) == item


@pytest.mark.parametrize("moment", [
    datetime(1970, 1, 1, tzinfo=UTC), datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(2026, 11, 26, 8, 0, 0, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(2026, 6, 1, 12, 0, tzinfo=timezone(timedelta(hours=-7))),
])
def test_an_event_rows_timestamp_is_to_us_of_its_time(moment: datetime) -> None:
    made = event().model_copy(update={"timestamp": moment})
    assert event_row(made)[1] == to_us(moment) == made.timestamp_us
