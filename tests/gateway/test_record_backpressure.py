"""The record backlog is bounded by backpressure: past the bound new calls wait (without blocking the
loop) until the writer catches up; no job is dropped and drain/close persist everything."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import httpx
import pytest
from cli.replay_server import ANTHROPIC, ReplayServer, Reply
from event_payload_samples import MINIMAL_PAYLOADS

from metis_core.errors import ConfigError, MetisError
from metis_core.events.bus import EventBus, EventFilter, Subscription
from metis_core.events.envelope import Event
from metis_core.gateway.record_writer import MAX_BACKLOG, RecordWriter
from metis_core.gateway.serve import settings_from_env
from metis_core.gateway.service import GatewaySettings
from metis_core.ids import new_session_id
from metis_core.messages.message import user_message
from metis_core.store.sessions import SessionStore, StoredConversation

from .gateway_harness import GatewayHarness


class SlowStore(SessionStore):
    """A store whose every batch takes `delay` seconds to commit: a writer that cannot keep up."""

    delay = 0.03

    def store_conversations(self, conversations: Iterable[StoredConversation]) -> list[tuple[str, MetisError]]:
        time.sleep(self.delay)
        return super().store_conversations(conversations)


def conversation(index: int) -> StoredConversation:
    sid = new_session_id()
    return StoredConversation("gateway:key", sid, [user_message(f"call {index}", session_id=sid)], stamp_us=1)


JOBS_PER_CALL = 3
CLIENTS = 8


async def client(writer: RecordWriter, calls: int) -> list[StoredConversation]:
    """One client's calls, one after another: admission, then the call's jobs submitted over its
    lifetime, as a gateway call submits them."""
    items = []
    for index in range(calls):
        await writer.room()
        item = conversation(index)
        writer.submit(lambda: None)  # turn.started
        await asyncio.sleep(0.001)  # the upstream call
        writer.submit(lambda: None)  # llm.call_completed
        writer.submit(lambda item=item: writer.stage(item))  # the conversation
        items.append(item)
    return items


def test_with_a_slow_store_the_backlog_stays_under_the_bound_plus_calls_in_flight_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    store = SlowStore(tmp_path / "metis.db")
    writer = RecordWriter(store, max_batch=4, linger=0.001, max_backlog=12)

    async def run() -> list[StoredConversation]:
        done = await asyncio.gather(*(client(writer, 25) for _ in range(CLIENTS)))
        return [item for items in done for item in items]

    items = asyncio.run(run())
    assert writer.waits > 0  # the writer fell behind (unbounded, ~600 jobs would have queued) and calls waited
    assert writer.max_backlog < writer.peak_backlog <= writer.max_backlog + JOBS_PER_CALL * CLIENTS
    writer.drain()
    assert writer.backlog == 0
    assert all(store.has_session(item.session_id) for item in items)
    writer.close()


def test_close_persists_a_full_backlog_and_lets_waiting_calls_in(tmp_path: Path) -> None:
    store = SlowStore(tmp_path / "metis.db")
    writer = RecordWriter(store, max_batch=2, linger=0.0, max_backlog=4)
    items = [conversation(i) for i in range(10)]
    for item in items:
        writer.submit(lambda item=item: writer.stage(item))
    assert writer.backlog > writer.max_backlog

    async def admitted_after_close() -> float:
        started = time.monotonic()
        threading.Thread(target=writer.close).start()
        await asyncio.wait_for(writer.room(), 10)
        return time.monotonic() - started

    assert asyncio.run(admitted_after_close()) < 10
    writer.close()
    assert all(store.has_session(item.session_id) for item in items)


def test_an_admission_waits_until_the_backlog_is_down_to_the_low_water_mark(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "metis.db")
    writer = RecordWriter(store, max_batch=1, linger=0.0, max_backlog=6)
    release, started = threading.Event(), threading.Event()
    writer.submit(lambda: (started.set(), release.wait(10)))
    assert started.wait(10)
    for _ in range(6):
        writer.submit(lambda: None)
    assert writer.backlog == 7 and writer.resume_at == 3

    async def wait_and_look() -> int:
        waiter = asyncio.ensure_future(writer.room())
        await asyncio.sleep(0.05)
        assert not waiter.done()  # over the bound: the call waits
        release.set()
        await asyncio.wait_for(waiter, 10)
        return writer.backlog

    assert asyncio.run(wait_and_look()) <= writer.resume_at
    writer.close()


def test_record_backlog_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METIS_GATEWAY_RECORD_BACKLOG", raising=False)
    assert settings_from_env().record_backlog == MAX_BACKLOG
    monkeypatch.setenv("METIS_GATEWAY_RECORD_BACKLOG", "64")
    assert settings_from_env().record_backlog == 64
    monkeypatch.setenv("METIS_GATEWAY_RECORD_BACKLOG", "0")
    with pytest.raises(ConfigError, match="at least 1"):
        settings_from_env()
    with pytest.raises(ValueError):
        RecordWriter(SessionStore(":memory:"), max_backlog=0)


def test_a_gateway_whose_record_falls_behind_answers_every_call_and_serves_health_checks_meanwhile(
    tmp_path: Path, upstream: ReplayServer
) -> None:
    calls = 40
    harness = GatewayHarness(tmp_path / "home", upstream, GatewaySettings(workspace=tmp_path, record_backlog=8))
    writer = harness.service.writer
    store = harness.runtime.store
    hold = threading.Event()
    store_batch = store.store_conversations

    def slow_batch(conversations: Iterable[StoredConversation]) -> list[tuple[str, MetisError]]:
        hold.wait(10)  # the writer is stuck until the test has seen a call wait and /healthz answer
        return store_batch(conversations)

    store.store_conversations = slow_batch  # type: ignore[method-assign]
    harness.start()
    try:
        _, token = harness.issue()
        upstream.script(ANTHROPIC, *[Reply.recording("anthropic", "response__text.json")] * calls)
        body = {"model": "anthropic:claude-haiku-4-5", "max_tokens": 20,
                "messages": [{"role": "user", "content": "hi"}]}

        async def drive() -> tuple[list[int], float]:
            async with httpx.AsyncClient(base_url=harness.base_url, timeout=30) as client:
                posts = [asyncio.ensure_future(client.post("/v1/messages", json=body, headers={"x-api-key": token}))
                         for _ in range(calls)]
                deadline = time.monotonic() + 10
                while writer.waits == 0 and time.monotonic() < deadline:
                    await asyncio.sleep(0.01)
                assert writer.waits > 0, "no call waited for the writer"
                started = time.monotonic()
                health = await client.get("/healthz")  # served while calls wait: the loop is not blocked
                health_time = time.monotonic() - started
                assert health.status_code == 200
                assert not all(post.done() for post in posts)
                hold.set()
                answers = await asyncio.gather(*posts)
                return [answer.status_code for answer in answers], health_time

        statuses, health_time = asyncio.run(drive())
        assert statuses == [200] * calls
        assert health_time < 2
        harness.drain()
        # Calls in flight when the bound was reached add at most their own jobs (~6 each) to it.
        assert writer.peak_backlog <= writer.max_backlog + 6 * calls
        completed = harness.events.of_type("turn.completed")
        assert len(completed) == calls
        assert all(store.has_session(event.session_id) for event in completed)
        assert len(harness.runtime.trace.events(types={"turn.completed"})) == calls
    finally:
        hold.set()
        harness.stop()


def test_the_writer_holds_its_batches_while_the_bus_is_half_full_so_no_event_is_rejected(tmp_path: Path) -> None:
    bus = EventBus(queue_capacity=8)
    seen: list[str] = []

    def slow_subscriber(event: Event) -> None:
        time.sleep(0.002)  # a trace store that falls behind
        seen.append(event.session_id)

    bus.subscribe(Subscription(name="slow", filter=EventFilter(event_types={"turn.started"}),
                               handler=slow_subscriber, fast_path=True))
    bus.flush()
    writer = RecordWriter(SessionStore(tmp_path / "metis.db"), bus=bus, max_batch=4, linger=0.0)
    sessions = [new_session_id() for _ in range(60)]
    for sid in sessions:
        writer.submit(lambda sid=sid: bus.emit_new("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id=sid))
    writer.drain()
    bus.flush()
    assert seen == sessions  # every event reached the subscriber, in order; none was refused as overflow
    writer.close()
    bus.shutdown(drain=True)
