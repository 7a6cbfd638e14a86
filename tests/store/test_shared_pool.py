"""One PostgreSQL pool per runtime: sessions, trace, learning and gateway keys share its connections.

Counted where it matters, at the server (`pg_stat_activity`, metis's connections carry the
application name `metis`): one idle connection for the whole runtime, never more than the
configured size under concurrent use, none once every store is closed, in any order. A connection
lost mid-transaction is named and rolls back; the other stores carry on on the same pool.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from trace_samples import chain

from metis_core.agent.runtime import Runtime
from metis_core.config import load_config
from metis_core.errors import ConfigError, DatabaseConnectionError, StoreError
from metis_core.events.bus import EventBus
from metis_core.learning.database import LearningDatabase
from metis_core.learning.loop import LearningLoop
from metis_core.learning.patterns.fingerprint import fingerprint
from metis_core.messages import user_message
from metis_core.store import SessionStore
from metis_core.store.backend import DATABASE_URL_ENV, POOL_SIZE_ENV, SharedDatabase, pool_size_setting
from metis_core.store.gateway_keys import GatewayKeyStore, open_gateway_key_store
from metis_core.trace import TraceStore

COUNT_METIS = ("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
               "AND application_name = 'metis'")


def metis_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as admin:
        row = admin.execute(COUNT_METIS).fetchone()
        assert row is not None
        return int(row[0])


def settled_connections(url: str, expected: int | Callable[[], int], timeout: float = 10.0) -> int:
    """The count once it reaches `expected` (a closed backend, such as the one that ran the
    migrations, leaves pg_stat_activity a moment after its connection closed)."""
    deadline = time.monotonic() + timeout
    target = expected if callable(expected) else lambda: expected
    while (count := metis_connections(url)) != target() and time.monotonic() < deadline:
        time.sleep(0.02)
    return count


def terminate_metis_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as admin:
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
                             "current_database() AND application_name = 'metis'").fetchall()
    return len(rows)


class Stack:
    """A runtime on `url` with the learning loop attached and a gateway key store on its database."""

    def __init__(self, home: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(DATABASE_URL_ENV, url)
        home.mkdir(exist_ok=True)
        self.runtime = Runtime(home=home, bus=EventBus(mode="strict"), connect_mcp=False)
        self.learning = LearningLoop.attach(self.runtime)
        self.keys: GatewayKeyStore = open_gateway_key_store(self.runtime.shared_database)

    def close(self) -> None:
        self.keys.close()
        self.runtime.close()


@pytest.fixture
def stack(tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    opened = Stack(tmp_path / "home", postgres_url, monkeypatch)
    yield opened
    opened.close()


def record_pattern(loop: LearningLoop, n: int) -> None:
    fp = fingerprint(f"task {n % 3}", estimated_tokens=5, has_images=False, workspace="", tools_used=())
    loop.patterns.record(fp, session_id=f"s{n}", turn_id=f"t{n}", model="m", score=None,
                         cost_usd=Decimal("0.1"), latency_ms=1, pricing_version="v", now_us=1_000_000 + n)


def test_a_runtime_holds_one_connection_where_separate_stores_held_one_each(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    separate = [SessionStore(postgres_url), TraceStore(postgres_url), LearningDatabase(postgres_url)]
    keys = open_gateway_key_store(postgres_url)
    assert settled_connections(postgres_url, 4) == 4  # what a runtime's stores held before they shared a pool
    for store in separate:
        store.close()
    keys.close()
    assert settled_connections(postgres_url, 0) == 0

    monkeypatch.setenv(POOL_SIZE_ENV, "2")
    stack = Stack(tmp_path / "home", postgres_url, monkeypatch)
    try:
        assert stack.runtime.shared_database.pool_size == 2
        session = stack.runtime.store.create_session(tmp_path)
        stack.runtime.trace.append_many(chain(session.id, 3))
        record_pattern(stack.learning, 1)
        assert stack.keys.count_request("user", "u", 1) == (1, 0)
        held = settled_connections(postgres_url, lambda: pool_connections(stack))
        assert held == pool_connections(stack)  # every connection at the server is the shared pool's
        assert 1 <= held <= 2  # sessions, trace, learning and keys: one pool of at most two
    finally:
        stack.close()
    assert settled_connections(postgres_url, 0) == 0


def pool_connections(stack: Stack) -> int:
    """How many connections the runtime's one pool holds, by its own count."""
    return int(stack.runtime.shared_database._pool.connections.get_stats()["pool_size"])


def test_stores_used_at_once_share_the_pool_and_never_exceed_its_size(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(POOL_SIZE_ENV, "3")
    stack = Stack(tmp_path / "home", postgres_url, monkeypatch)
    rt = stack.runtime
    peak = 0
    done = threading.Event()
    failures: list[BaseException] = []

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, metis_connections(postgres_url))
            time.sleep(0.005)

    def sessions() -> None:
        for n in range(25):
            session = rt.store.create_session(tmp_path)
            rt.store.append_message(user_message(f"hello {n}", session_id=session.id))

    events = chain("sess_busy", 400)

    def trace() -> None:
        for e in events:
            rt.bus.emit(e)

    def learning() -> None:
        for n in range(25):
            record_pattern(stack.learning, n)

    def keys() -> None:
        for _ in range(60):
            stack.keys.count_request("team", "t", 7)

    def guarded(work: Callable[[], None]) -> None:
        try:
            work()
        except BaseException as error:  # reported by the assertion below
            failures.append(error)

    settled_connections(postgres_url, lambda: pool_connections(stack))  # the migration's backend has gone
    sampler = threading.Thread(target=sample)
    sampler.start()
    workers = [threading.Thread(target=guarded, args=(w,)) for w in (sessions, trace, learning, keys, sessions)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
        rt.bus.flush(timeout=30)
        rt.trace.flush()
    finally:
        done.set()
        sampler.join()
    try:
        assert failures == []
        assert rt.shared_database.pool_size == 3
        assert 1 <= peak <= 3
        assert len(rt.store.list_sessions(limit=100)) == 50
        assert [e.id for e in rt.trace.replay("sess_busy")] == [e.id for e in events]
        assert stack.learning.patterns.counts()[1] == 25
        assert stack.keys.count_request("team", "t", 7) == (61, 0)
    finally:
        stack.close()
    assert settled_connections(postgres_url, 0) == 0


def test_a_connection_lost_mid_transaction_is_named_and_the_other_stores_carry_on(
    stack: Stack, tmp_path: Path, postgres_url: str
) -> None:
    rt = stack.runtime
    session = rt.store.create_session(tmp_path)
    first = chain(session.id, 20)
    for e in first:
        rt.bus.emit(e)
    rt.bus.flush(timeout=10)
    rt.trace.flush()
    with pytest.raises(DatabaseConnectionError, match="rolled back") as caught, rt.store._db.transaction():
        rt.store._db.execute("UPDATE sessions SET title = 'half' WHERE id = ?", (session.id,))
        assert terminate_metis_connections(postgres_url) >= 1
        rt.store._db.execute("UPDATE sessions SET title = 'written' WHERE id = ?", (session.id,))
    assert postgres_url in str(caught.value)  # the database is named (the test URL has no password)
    assert rt.store.get_session(session.id).title is None  # nothing half-written, and the store reads again
    later = chain(session.id, 20)
    for e in later:
        rt.bus.emit(e)
    rt.bus.flush(timeout=10)
    rt.trace.flush()
    assert len(rt.trace.replay(session.id)) == 40  # the trace's batches found a fresh connection
    record_pattern(stack.learning, 1)
    assert stack.learning.patterns.counts() == (1, 1)
    assert stack.keys.count_request("user", "u", 1) == (1, 0)
    assert 1 <= metis_connections(postgres_url) <= 8


def test_the_trace_writes_its_last_batch_before_the_pool_closes(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = Stack(tmp_path / "home", postgres_url, monkeypatch)
    events = chain("sess_last", 150)
    for e in events:
        stack.runtime.bus.emit(e)
    stack.close()  # keys first, as the gateway does; then the runtime drains the bus and the trace
    assert settled_connections(postgres_url, 0) == 0
    with TraceStore(postgres_url) as trace:
        assert [e.id for e in trace.replay("sess_last")] == [e.id for e in events]


def test_the_pool_closes_with_the_last_store_in_whatever_order_they_close(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = Stack(tmp_path / "home", postgres_url, monkeypatch)
    shared = stack.runtime.shared_database
    spare = shared.open()
    spare.close()
    with pytest.raises(StoreError, match="closed; open the store again"):
        spare.execute("SELECT 1")
    assert stack.runtime.store.list_sessions() == []  # closing one view leaves the others working

    stack.runtime.close()  # the runtime first: the key store still holds its lease on the pool
    with pytest.raises(StoreError, match="was closed"):
        shared.open()
    assert stack.keys.count_request("user", "u", 1) == (1, 0)
    assert settled_connections(postgres_url, lambda: pool_connections(stack)) == pool_connections(stack) >= 1
    stack.keys.close()
    assert settled_connections(postgres_url, 0) == 0
    stack.keys.close()  # closing twice releases once
    stack.runtime.close()


def test_the_pool_size_comes_from_the_environment_then_the_config(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("database_pool_size: 5\n")
    monkeypatch.setenv(DATABASE_URL_ENV, postgres_url)
    with Runtime(home=home, bus=EventBus(mode="strict"), connect_mcp=False) as rt:
        assert rt.shared_database.pool_size == 5
    monkeypatch.setenv(POOL_SIZE_ENV, "4")
    with Runtime(home=home, bus=EventBus(mode="strict"), connect_mcp=False) as rt:
        assert rt.shared_database.pool_size == 4
    for bad in ("1", "eight", "-3"):
        monkeypatch.setenv(POOL_SIZE_ENV, bad)
        with pytest.raises(ConfigError, match=f"{POOL_SIZE_ENV} must be a whole number of at least 2"):
            SharedDatabase(postgres_url)
    monkeypatch.delenv(POOL_SIZE_ENV)
    (home / "config.yaml").write_text("database_pool_size: 1\n")
    with pytest.raises(ConfigError, match="database_pool_size"):
        load_config(home)
    assert pool_size_setting(None) == 8
    assert settled_connections(postgres_url, 0) == 0


def test_on_sqlite_each_store_keeps_a_connection_of_its_own(tmp_path: Path) -> None:
    shared = SharedDatabase(tmp_path / "metis.db")
    assert shared.pool_size is None and shared.backend == "sqlite"
    sessions, trace = SessionStore(shared), TraceStore(shared)
    shared.close()  # a file connection is the store's own: nothing else to release
    try:
        assert sessions._db is not trace._db  # SQLite keeps one transaction per connection
        session = sessions.create_session(tmp_path)
        trace.append_many(chain(session.id, 2))
        assert trace.count() == 2 and sessions.get_session(session.id).id == session.id
    finally:
        sessions.close()
        trace.close()
