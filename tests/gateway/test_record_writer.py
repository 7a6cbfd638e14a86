"""The gateway's record writer: order kept, many calls per transaction, isolation, nothing lost at shutdown."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from event_payload_samples import MINIMAL_PAYLOADS

from metis_core.errors import MetisError, StoreError
from metis_core.events.bus import EventBus, EventFilter, Subscription
from metis_core.gateway.record_writer import RecordWriter
from metis_core.ids import new_session_id
from metis_core.messages.message import user_message
from metis_core.store.sessions import SessionStore, StoredConversation

from .gateway_harness import hold


def conversation(text: str, session_id: str | None = None) -> StoredConversation:
    sid = session_id or new_session_id()
    return StoredConversation("gateway:key", sid, [user_message(text, session_id=sid)], title=text, stamp_us=1)


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "metis.db")


def stage_later(writer: RecordWriter, item: StoredConversation, order: list[str] | None = None) -> None:
    """Submit a job that stages `item` (noting its title in `order` when given), as a call record does."""

    def job() -> None:
        if order is not None:
            order.append(item.title or "")
        writer.stage(item)

    writer.submit(job)


def test_jobs_run_in_submission_order_and_queued_calls_share_one_transaction(store: SessionStore) -> None:
    writer = RecordWriter(store)
    release = hold(writer)
    order: list[str] = []
    items = [conversation(f"call {i}") for i in range(40)]
    for item in items:
        stage_later(writer, item, order)
    release.set()
    writer.drain()
    assert order == [f"call {i}" for i in range(40)]
    assert writer.batches == 1  # the 40 calls queued behind the busy writer committed together
    for i, item in enumerate(items):
        assert [m.text() for m in store.load_messages(item.session_id)] == [f"call {i}"]
    writer.close()


def test_calls_arriving_within_the_linger_of_an_idle_writer_share_one_transaction_and_one_event_burst(
    store: SessionStore,
) -> None:
    bus = EventBus()
    depths: list[int] = []
    bus.subscribe(Subscription(name="depth", filter=EventFilter(event_types={"turn.started"}),
                               handler=lambda event: depths.append(bus.queue_depth), fast_path=True))
    bus.flush()
    writer = RecordWriter(store, bus=bus, linger=0.2)
    items = [conversation(f"call {i}") for i in range(10)]
    for item in items:  # the writer is idle: the first job starts the linger, the rest arrive within it
        writer.submit(lambda item=item: bus.emit_new("turn.started", MINIMAL_PAYLOADS["turn.started"],
                                                     session_id=item.session_id))
        stage_later(writer, item)
    writer.drain()
    bus.flush()
    assert writer.batches == 1
    assert depths == list(range(10, 0, -1))  # the ten events reached the dispatcher as one burst
    assert all(len(store.load_messages(item.session_id)) == 1 for item in items)
    writer.close()
    bus.shutdown(drain=True)


def test_calls_that_arrive_while_a_batch_is_written_wait_the_linger_too(store: SessionStore) -> None:
    """Not only the first batch after a quiet spell lingers: a call arriving while a batch is written
    waits for the next batch's linger, so the calls of those milliseconds share it."""
    writer = RecordWriter(store, linger=0.1)
    ran: dict[str, float] = {}

    def second() -> None:
        ran["second"] = time.monotonic()

    def first() -> None:  # a call that arrives while this batch is being written
        writer.submit(second)
        ran["first done"] = time.monotonic()

    writer.submit(first)
    writer.drain()
    assert ran["second"] - ran["first done"] >= 0.1
    writer.close()


def test_a_batch_is_capped_at_max_batch_jobs(store: SessionStore) -> None:
    writer = RecordWriter(store, max_batch=8)
    release = hold(writer)
    items = [conversation(f"call {i}") for i in range(20)]
    for item in items:
        stage_later(writer, item)
    release.set()
    writer.drain()
    assert writer.batches == 3  # 7 (behind the holding job), 8, 5
    assert all(store.has_session(item.session_id) for item in items)
    writer.close()


def test_a_failing_job_and_a_refused_conversation_do_not_cost_the_rest_of_the_batch(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    taken = conversation("already stored")
    store.store_conversations([taken])
    writer = RecordWriter(store)
    release = hold(writer)
    before, after = conversation("before"), conversation("after")
    stage_later(writer, before)
    writer.submit(lambda: 1 / 0)
    stage_later(writer, conversation("a second time", session_id=taken.session_id))
    stage_later(writer, after)
    release.set()
    writer.drain()
    assert [m.text() for m in store.load_messages(before.session_id)] == ["before"]
    assert [m.text() for m in store.load_messages(after.session_id)] == ["after"]
    assert [m.text() for m in store.load_messages(taken.session_id)] == ["already stored"]
    assert "record job failed" in caplog.text and f"{taken.session_id} not stored" in caplog.text
    writer.close()


def test_a_failed_batch_transaction_is_retried_call_by_call(store: SessionStore) -> None:
    class FailsOnBatches(SessionStore):
        def store_conversations(self, conversations: Iterable[StoredConversation]) -> list[tuple[str, MetisError]]:
            items = list(conversations)
            if len(items) > 1:
                raise StoreError("database is locked")
            return super().store_conversations(items)

    flaky = FailsOnBatches(store.path)
    writer = RecordWriter(flaky)
    release = hold(writer)
    items = [conversation(f"call {i}") for i in range(5)]
    for item in items:
        stage_later(writer, item)
    release.set()
    writer.drain()
    assert all(flaky.has_session(item.session_id) for item in items)
    writer.close()


def test_close_commits_everything_still_queued(store: SessionStore) -> None:
    writer = RecordWriter(store)
    release = hold(writer)
    items = [conversation(f"call {i}") for i in range(10)]
    for item in items:
        stage_later(writer, item)
    threading.Timer(0.2, release.set).start()
    writer.close()
    assert all(store.has_session(item.session_id) for item in items)


def test_queued_records_are_written_when_the_process_exits_without_closing(tmp_path: Path) -> None:
    db = tmp_path / "metis.db"
    script = textwrap.dedent(f"""
        import threading, time
        from metis_core.gateway.record_writer import RecordWriter
        from metis_core.messages.message import user_message
        from metis_core.store.sessions import SessionStore, StoredConversation
        writer = RecordWriter(SessionStore({str(db)!r}))
        writer.submit(lambda: time.sleep(0.3))
        for i in range(25):
            sid = f"sess_exit_{{i:02d}}"
            item = StoredConversation("gateway:key", sid, [user_message(str(i), session_id=sid)])
            writer.submit(lambda item=item: writer.stage(item))
        # no drain, no close: the interpreter exits with all of it queued
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    store = SessionStore(db)
    assert [store.load_messages(f"sess_exit_{i:02d}")[0].text() for i in range(25)] == [str(i) for i in range(25)]
