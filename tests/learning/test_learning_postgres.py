"""The learning layer on a shared PostgreSQL database: its tables live with the runtime's stores,
several processes write at once without losing a write, and a connection lost mid-write is named,
logged once and costs only the write it interrupted.

Every other test in this folder already runs on both backends (conftest.py); these need PostgreSQL
(the two-writer test runs on a SQLite file too).
"""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from postgres_server import shared_server
from store_backends import scalar_on

from metis_core.learning.database import LearningDatabase
from metis_core.learning.patterns.fingerprint import fingerprint
from metis_core.learning.patterns.store import PatternStore
from metis_core.learning.settings import PatternSettings
from metis_core.store.backend import DATABASE_URL_ENV

from .conftest import LearningHarness
from .test_pattern_routing import PROOF, SUMMARY, session

WRITER = Path(__file__).with_name("learning_writer.py")


@pytest.fixture(autouse=True)
def learning_backend(monkeypatch: pytest.MonkeyPatch, _postgres_session: None) -> str:
    """PostgreSQL only: METIS_DATABASE_URL names a fresh database (overrides conftest's pair)."""
    url = shared_server().fresh_database_url()
    monkeypatch.setenv(DATABASE_URL_ENV, url)
    return url


async def test_the_learning_tables_live_in_the_runtime_database_and_another_machine_sees_them(
    learning: LearningHarness, learning_backend: str, tmp_path: Path
) -> None:
    h, url = learning, learning_backend
    assert h.loop.db.backend == "postgres" and "127.0.0.1" in str(h.loop.db.location)
    sid = await session(h, SUMMARY, good=True)
    assert not (h.home / "metis.db").exists()  # nothing went to a local SQLite file
    assert scalar_on(url, f"SELECT COUNT(*) FROM eval_verdicts WHERE session_id = '{sid}'") == 3
    assert scalar_on(url, "SELECT COUNT(*) FROM pattern_outcomes") == 1
    (tmp_path / "other_home").mkdir()
    other = LearningHarness(tmp_path / "other_home", h.workspace)  # a second runtime on the same database
    try:
        assert other.loop.patterns.counts() == (1, 1)
        assert [v.score for v in other.loop.verdicts.of_subject("session", sid)] == \
            [v.score for v in h.loop.verdicts.of_subject("session", sid)]
        (stored,) = other.loop.patterns.fingerprints()
        assert list(stored.fingerprint.features)[:3] == ["lead", "size", "context"]  # jsonb order undone
        assert stored.fingerprint.features["lead"] == "summarize"
    finally:
        other.runtime.close()


@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
def test_two_processes_recording_at_once_lose_no_write(learning_backend: str, backend: str, tmp_path: Path) -> None:
    url, count = learning_backend if backend == "postgres" else str(tmp_path / "metis.db"), 60
    writers = [subprocess.Popen([sys.executable, str(WRITER), url, tag, str(count)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for tag in ("a", "b")]
    for writer in writers:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    for writer in writers:  # both start together
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    results = [writer.communicate(timeout=120) for writer in writers]
    for writer, (_, err) in zip(writers, results, strict=True):
        assert writer.returncode == 0, err
    writes = [json.loads(line) for out, _ in results for line in out.splitlines()]
    assert len(writes) == 2 * count
    assert scalar_on(url, "SELECT COUNT(*) FROM pattern_fingerprints") == 2
    assert sum(w["new"] for w in writes) == 2  # each fingerprint created exactly once
    for fingerprint_id in {w["fingerprint"] for w in writes}:
        mine = [w for w in writes if w["fingerprint"] == fingerprint_id]
        # serialized: every write saw all earlier ones, so the sample sizes count 1..n with no repeat
        assert sorted(w["after"] for w in mine) == list(range(1, count + 1))
        assert all(w["after"] == w["before"] + 1 for w in mine)
    assert scalar_on(url, "SELECT COUNT(*) FROM pattern_outcomes") == 2 * count
    assert scalar_on(url, "SELECT COUNT(*) FROM eval_verdicts") == 2 * count
    order = [row[0] for row in _rows(url, "SELECT session_id FROM pattern_outcomes ORDER BY id")]
    assert sum(a != b for a, b in itertools.pairwise(order)) >= 2  # the writers interleaved


def _rows(location: str, sql: str) -> list[tuple[object, ...]]:
    db = LearningDatabase(location)
    try:
        return db.rows(sql)
    finally:
        db.close()


class Saboteur(threading.Thread):
    """Holds an EXCLUSIVE lock on `table` so the next insert into it waits, terminates the backend
    of that waiting insert (its connection is lost mid-transaction), then lets go of the lock."""

    def __init__(self, url: str, table: str) -> None:
        super().__init__(daemon=True)
        self.url, self.table = url, table
        self.locked = threading.Event()
        self.terminated: int | None = None

    def run(self) -> None:
        with psycopg.connect(self.url) as locker, psycopg.connect(self.url, autocommit=True) as admin:
            locker.execute(f"LOCK TABLE {self.table} IN EXCLUSIVE MODE")
            self.locked.set()
            deadline = time.monotonic() + 20
            while self.terminated is None and time.monotonic() < deadline:
                row = admin.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = "
                    "'Lock' AND query LIKE %s", (f"INSERT INTO {self.table}%",)).fetchone()
                if row is None:
                    time.sleep(0.02)
                    continue
                admin.execute("SELECT pg_terminate_backend(%s)", (row[0],))
                self.terminated = int(row[0])
            locker.rollback()


def _learning_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("metis_core") and r.levelno >= logging.WARNING]


async def test_a_connection_lost_while_recording_patterns_is_named_logged_once_and_keeps_earlier_writes(
    learning: LearningHarness, learning_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    h = learning
    await session(h, SUMMARY, good=True)
    assert h.loop.patterns.counts() == (1, 1)
    caplog.set_level(logging.INFO)
    saboteur = Saboteur(learning_backend, "pattern_outcomes")
    saboteur.start()
    assert saboteur.locked.wait(10)
    lost = await session(h, PROOF, good=True)
    saboteur.join(30)
    assert saboteur.terminated is not None
    (warning,) = _learning_warnings(caplog)
    assert warning.startswith(f"patterns of session {lost} not recorded: lost or could not open the connection")
    assert "rolled back" in warning and "***" not in warning
    assert not h.of_type("pattern.recorded", lost)
    assert h.loop.patterns.counts() == (1, 1)  # the earlier write is intact, the new fingerprint rolled back
    again = await session(h, PROOF, good=True)  # the bus and the pool carry on
    assert [e.payload["sample_size_after"] for e in h.of_type("pattern.recorded", again)] == [1]
    assert h.loop.patterns.counts() == (2, 2)


async def test_a_connection_lost_while_storing_a_verdict_is_eval_failed_and_logged_once(
    learning: LearningHarness, learning_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    h = learning
    before = await session(h, SUMMARY, good=True)
    committed = len(h.loop.verdicts.since())
    caplog.set_level(logging.INFO)
    saboteur = Saboteur(learning_backend, "eval_verdicts")
    saboteur.start()
    assert saboteur.locked.wait(10)
    lost = await session(h, PROOF)
    saboteur.join(30)
    assert saboteur.terminated is not None
    (failed,) = h.of_type("eval.failed", lost)
    assert failed.payload["failure_mode"] == "judge_call_failed"
    assert failed.payload["error_message"].startswith("verdict not stored: lost or could not open the connection")
    (warning,) = _learning_warnings(caplog)
    assert failed.payload["eval_id"] in warning and "judge_call_failed" in warning
    completed = h.of_type("eval.completed", lost)
    assert "session" in {e.payload["subject_kind"] for e in completed}  # later evaluations went on
    stored = h.loop.verdicts.since()
    assert len(stored) == committed + len(completed)
    assert len([v for v in stored if v.session_id == before]) == committed  # earlier verdicts intact
    assert len(h.of_type("pattern.recorded", lost)) == 1


def test_pattern_store_clear_and_caps_on_postgres(learning_backend: str) -> None:
    db = LearningDatabase(learning_backend)
    try:
        store = PatternStore(db, PatternSettings(soft_cap_rows=3, hard_cap_rows=5))
        fp = fingerprint("Fix the bug", estimated_tokens=5, has_images=False, workspace="", tools_used=())
        for n in range(7):
            store.record(fp, session_id="s", turn_id=f"t{n}", model="m", score=None, cost_usd=Decimal("0.1"),
                         latency_ms=1, pricing_version="v", now_us=1_000_000 + n)
        again = store.record(fp, session_id="s", turn_id="t6", model="m", score=0.5, cost_usd=Decimal("0.2"),
                             latency_ms=2, pricing_version="v", now_us=2_000_000)
        assert (again.sample_size_before, again.sample_size_after) == (7, 7)  # recorded again: replaced
        evicted = store.enforce_caps()
        assert evicted is not None and (evicted.trigger, evicted.entries_evicted) == ("hard_cap_evict", 4)
        assert [o.cost_usd for o in store.outcomes([again.fingerprint_id])][-1] == Decimal("0.2")
        assert store.clear().outcomes_after == 0 and store.counts() == (0, 0)
    finally:
        db.close()
