"""The PostgreSQL live feed: every writer's events, in commit order, once — across a killed
listening connection and past a transaction that commits after a later one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import psycopg
from store_backends import execute_on
from trace_samples import chain, event

from metis_core.events.envelope import Event
from metis_core.store.postgres.event_positions import APPLICATION_NAME, START, EventPositions
from metis_core.trace import TraceStore
from metis_core.trace.event_rows import event_row
from metis_core.trace.live_feed import LiveFeed, open_live_feed

WAIT = 10.0


class Received:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.changed = threading.Condition()

    def __call__(self, event: Event) -> None:
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def wait_for(self, condition: Callable[[list[Event]], bool]) -> list[Event]:
        with self.changed:
            assert self.changed.wait_for(lambda: condition(self.events), WAIT), [e.id for e in self.events]
            return list(self.events)


def _insert(conn: psycopg.Connection[object], item: Event) -> None:
    conn.execute("INSERT INTO events (id, timestamp_us, session_id, turn_id, parent_event_id, type, actor, "
                 "sensitivity, payload_json) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", event_row(item))


def test_two_writers_events_arrive_in_commit_order_once_across_a_killed_listener(postgres_url: str) -> None:
    with TraceStore(postgres_url) as first:
        first.append(event("before"))  # stored before the feed starts: not delivered live
        feed = open_live_feed(postgres_url)
        assert isinstance(feed, LiveFeed)
        received = Received()
        try:
            _, start = feed.subscribe(received)
            with TraceStore(postgres_url) as second:
                first.append_many(chain("sess_a", 5))
                second.append_many(chain("sess_b", 5))
                received.wait_for(lambda got: len(got) >= 10)
                execute_on(postgres_url, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                         f"WHERE application_name = '{APPLICATION_NAME}'")
                second.append_many(chain("sess_b2", 5))  # written while the feed reconnects
                first.append_many(chain("sess_a2", 5))
                got = received.wait_for(lambda got: len(got) >= 20)
            assert feed.reconnects >= 1
        finally:
            feed.close()
        with psycopg.connect(postgres_url) as conn:
            stored = [row[0] for row in conn.execute(
                "SELECT id FROM events WHERE (txid, seq) > (%s, %s) ORDER BY txid, seq", start)]
    assert [e.id for e in got] == stored and len(set(stored)) == 20  # commit order, none lost, none twice
    assert "before" not in {e.session_id for e in got}
    assert feed.replay("", start, session_ids=["sess_b"], types=None, limit=100) == []  # nothing up to start
    upto = feed.position
    assert [e.id for e in feed.replay(got[9].id, upto, session_ids=None, types=None, limit=100)] == stored[10:]


def test_an_event_committed_after_a_later_transaction_is_not_skipped(postgres_url: str) -> None:
    with TraceStore(postgres_url):
        pass  # migrated
    feed = open_live_feed(postgres_url)
    assert feed is not None
    received = Received()
    early, late = event("slow_writer"), event("fast_writer")
    try:
        feed.subscribe(received)
        with psycopg.connect(postgres_url) as slow, psycopg.connect(postgres_url, autocommit=True) as fast:
            _insert(slow, early)  # its transaction (the older one) stays open ...
            _insert(fast, late)  # ... while a younger one commits
            reader = EventPositions(postgres_url)
            assert reader.any_after(START) and reader.after(START, 10) == []  # held back behind the older
            reader.close()
            slow.commit()
            got = received.wait_for(lambda got: len(got) >= 2)
    finally:
        feed.close()
    assert [e.id for e in got] == [early.id, late.id]


def test_sqlite_has_no_feed_the_bus_stays_the_live_source(tmp_path: Path) -> None:
    assert open_live_feed(tmp_path / "metis.db") is None
