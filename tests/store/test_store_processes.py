"""Several processes on one database: continuation, concurrent writers, and SIGKILL at random."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from metis_core.messages import user_message
from metis_core.store import SessionStore
from metis_core.trace import TraceStore

_CHILD_PRELUDE = """
import sys
from metis_core.store import SessionStore
from metis_core.messages import user_message
db = sys.argv[1]
"""


def _run_child(code: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD_PRELUDE + code, *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_session_written_by_one_process_is_continued_by_others(tmp_path: Path) -> None:
    db = tmp_path / "metis.db"
    session_id = _run_child(
        "s = SessionStore(db)\n"
        "r = s.create_session('/w', active_model='anthropic:x')\n"
        "for t in ('one', 'two', 'three'): s.append_message(user_message(t, session_id=r.id))\n"
        "print(r.id)",
        str(db),
    )
    with SessionStore(db) as store:
        assert [m.text() for m in store.load_messages(session_id)] == ["one", "two", "three"]
        store.append_message(user_message("four", session_id=session_id))
    seen = _run_child(
        "s = SessionStore(db)\n"
        "sid = sys.argv[2]\n"
        "n = len(s.load_messages(sid))\n"
        "for t in ('five', 'six'): s.append_message(user_message(t, session_id=sid))\n"
        "print(n)",
        str(db),
        session_id,
    )
    assert seen == "4"
    with SessionStore(db) as store:
        texts = [m.text() for m in store.load_messages(session_id)]
        assert texts == ["one", "two", "three", "four", "five", "six"]
        assert store.get_session(session_id).active_model == "anthropic:x"


def test_two_processes_appending_at_once_both_succeed(tmp_path: Path) -> None:
    db = tmp_path / "metis.db"
    with SessionStore(db) as store:
        sessions = [store.create_session(tmp_path).id for _ in range(2)]
    code = (
        "s = SessionStore(db)\nfor i in range(150): s.append_message(user_message(f'm{i}', session_id=sys.argv[2]))\n"
    )
    children = [
        subprocess.Popen([sys.executable, "-c", _CHILD_PRELUDE + code, str(db), sid], stderr=subprocess.PIPE, text=True)
        for sid in sessions
    ]
    for child in children:
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
    with SessionStore(db) as store:
        for sid in sessions:
            assert [m.text() for m in store.load_messages(sid)] == [f"m{i}" for i in range(150)]
        assert store._db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


_CRASH_CHILD = """
import sys
from metis_core.events.envelope import Actor, Event
from metis_core.ids import new_tool_use_id
from metis_core.messages import Message, MessageMetadata, Role, ToolUseBlock, TextBlock, user_message
from metis_core.store import SessionStore
from metis_core.trace import TraceStore
sys.path.insert(0, sys.argv[3])
from session_samples import assistant, tool_result
db, sid = sys.argv[1], sys.argv[2]
store, trace = SessionStore(db), TraceStore(db)
print("ready", flush=True)
i = 0
while True:
    if i % 3 == 2:
        tu = new_tool_use_id()
        batch = [assistant(sid, [TextBlock(text=f"call {i}"), ToolUseBlock(id=tu, name="t", input={"i": i})]),
                 tool_result(sid, tu, "r" * (i % 700))]
        for m in batch:
            store.append_message(m)
            print("M", m.id, flush=True)
    else:
        m = user_message(f"msg {i} " + "y" * (i * 37 % 3000), session_id=sid)
        store.append_message(m)
        print("M", m.id, flush=True)
    e = Event(session_id=sid, type="turn.started", actor=Actor.USER, payload={"i": i})
    trace.append(e)
    print("E", e.id, flush=True)
    i += 1
"""


def test_sigkill_at_random_points_never_loses_a_reported_commit(tmp_path: Path) -> None:
    db = tmp_path / "metis.db"
    tests_dir = str(Path(__file__).resolve().parent.parent)
    with SessionStore(db) as store:
        sid = store.create_session(tmp_path).id
    rng = random.Random(6)
    reported_messages: list[str] = []
    reported_events: list[str] = []
    kills = 0
    started = time.monotonic()
    while kills < 25 and (kills < 15 or time.monotonic() - started < 12):
        errors = tmp_path / "child.err"
        with errors.open("w") as err_file:
            child = subprocess.Popen(
                [sys.executable, "-c", _CRASH_CHILD, str(db), sid, tests_dir],
                stdout=subprocess.PIPE,
                stderr=err_file,
                text=True,
            )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready", errors.read_text()
        time.sleep(rng.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        out = child.stdout.read()  # the same buffered reader as readline(): no line is skipped
        child.stdout.close()
        child.wait(timeout=30)
        assert child.returncode == -signal.SIGKILL
        kills += 1
        for line in out.splitlines():  # a torn last line was never fully reported
            kind, _, ident = line.partition(" ")
            if len(ident) != 26:
                continue
            (reported_messages if kind == "M" else reported_events).append(ident)

        with SessionStore(db) as store:
            assert store._db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            stored = [m.id for m in store.load_messages(sid)]
            # everything reported is there, in order; at most the unreported last one extra
            assert stored[: len(reported_messages)] == reported_messages
            assert len(stored) - len(reported_messages) <= 1
            reported_messages = stored  # an unreported commit is still a commit
            stored_set = set(stored)  # tool_call rows never point at a message that is not there
            for call in store.tool_calls(sid):
                assert call.message_id in stored_set
                assert call.result_message_id is None or call.result_message_id in stored_set
        with TraceStore(db) as trace:
            missing = [e for e in reported_events if trace.get(e) is None]
            assert missing == []
    assert kills >= 15
    assert len(reported_messages) > kills  # the children did real work between kills
    print(
        f"\n{kills} SIGKILLs, {len(reported_messages)} messages and {len(reported_events)} events verified "
        f"in {time.monotonic() - started:.1f}s"
    )
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_readers_see_whole_messages_while_a_writer_appends(tmp_path: Path) -> None:
    db = tmp_path / "metis.db"
    with SessionStore(db) as store:
        sid = store.create_session(tmp_path).id
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _CHILD_PRELUDE + "s = SessionStore(db)\n"
            "for i in range(300): s.append_message(user_message(f'm{i}', session_id=sys.argv[2]))",
            str(db),
            sid,
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    seen_counts = []
    with SessionStore(db) as reader:
        while writer.poll() is None:
            texts = [m.text() for m in reader.load_messages(sid)]
            assert texts == [f"m{i}" for i in range(len(texts))]
            seen_counts.append(len(texts))
        assert writer.returncode == 0, writer.stderr.read() if writer.stderr else ""
        assert reader.message_count(sid) == 300
    assert seen_counts == sorted(seen_counts)


# --- SIGKILL while the database is being created or migrated ----------------------------------

_MIGRATION_CHILD = """
import sys, time
from metis_core.store.sqlite import migrations
stop_at = int(sys.argv[2])

def pausing(step, number):
    def run(conn):
        step(conn)  # the step's work is done, uncommitted: the worst moment to die
        print(f"inside {number}", flush=True)
        time.sleep(60)
    return run

migrations.MIGRATIONS = tuple(
    (name, pausing(step, n) if n == stop_at else step) for n, (name, step) in enumerate(migrations.MIGRATIONS, 1)
)
from metis_core.store import SessionStore
print("go", flush=True)
SessionStore(sys.argv[1])
print("done", flush=True)
"""


def _kill_inside_step(db: Path, step: int) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _MIGRATION_CHILD, str(db), str(step)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "go"
    assert child.stdout.readline().strip() == f"inside {step}"
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL


def _assert_whole_current_schema(db: Path) -> None:
    from metis_core.store import SCHEMA_VERSION

    with SessionStore(db) as store:
        conn = store._db.conn
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        steps = [v for (v,) in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert steps == list(range(1, SCHEMA_VERSION + 1))  # each step applied exactly once
        sid = store.create_session("/w").id  # and the file is usable
        store.append_message(user_message("after the crash", session_id=sid))


def test_sigkill_inside_each_step_of_the_first_creation_leaves_a_file_that_opens(tmp_path: Path) -> None:
    from metis_core.store import SCHEMA_VERSION

    for step in range(1, SCHEMA_VERSION + 1):
        db = tmp_path / f"fresh-{step}.db"
        _kill_inside_step(db, step)
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == step - 1  # the killed step left nothing
        conn.close()
        _assert_whole_current_schema(db)


def test_sigkill_at_random_moments_of_the_first_creation_leaves_a_file_that_opens(tmp_path: Path) -> None:
    rng = random.Random(24)
    code = "import sys\nfrom metis_core.store import SessionStore\nprint('go', flush=True)\nSessionStore(sys.argv[1])\n"
    code += "print('created', flush=True)\nimport time\ntime.sleep(60)\n"
    mid_creation = 0
    for attempt in range(12):
        db = tmp_path / f"random-{attempt}.db"
        child = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline().strip() == "go"
        time.sleep(rng.uniform(0.0, 0.04))
        child.send_signal(signal.SIGKILL)
        out = child.stdout.read()
        child.stdout.close()
        child.wait(timeout=30)
        mid_creation += "created" not in out
        _assert_whole_current_schema(db)
    print(f"\n{mid_creation} of 12 random kills landed before the creation finished")


def test_sigkill_inside_a_migration_of_an_old_file_keeps_its_data(tmp_path: Path) -> None:
    from metis_core.store import SCHEMA_VERSION
    from metis_core.store.db import connect
    from metis_core.store.message_rows import message_row
    from metis_core.store.migrations import migrate

    for start in range(1, SCHEMA_VERSION):
        for step in range(start + 1, SCHEMA_VERSION + 1):
            db = tmp_path / f"old-{start}-{step}.db"
            conn = connect(db)
            migrate(conn, db, up_to=start)
            conn.close()
            written = [user_message(f"old {n}", session_id="sess_old") for n in range(5)]
            raw = sqlite3.connect(db)
            raw.execute(
                "INSERT INTO sessions (id, workspace_path, active_model, routing_policy_json, schema_version, "
                "created_at, updated_at) VALUES ('sess_old', '/w', 'anthropic:x', NULL, 1, 1000, 2000)"
            )
            for message in written:
                raw.execute("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?)", message_row(message)[:7])
            raw.commit()
            raw.close()
            _kill_inside_step(db, step)
            _assert_whole_current_schema(db)
            with SessionStore(db) as store:
                assert [m.text() for m in store.load_messages("sess_old")] == [f"old {n}" for n in range(5)]


def test_processes_opening_a_fresh_database_together_all_open_it(tmp_path: Path) -> None:
    # Switching a new file to WAL answers "database is locked" at once (no busy wait) while another
    # process holds the switch: before the retry, about one pair in four failed this way.
    code = "import sys; from metis_core.store.backend import open_backend; open_backend(sys.argv[1]).close()"
    for attempt in range(12):
        db = str(tmp_path / f"fresh{attempt}.db")
        pair = [subprocess.Popen([sys.executable, "-c", code, db], stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for child in pair:
            _, err = child.communicate(timeout=60)
            assert child.returncode == 0, err[-600:]


def test_the_wal_switch_waits_out_a_lock_and_gives_up_at_the_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    from metis_core.store.sqlite import connection

    class Busy:
        def __init__(self, failures: int) -> None:
            self.failures, self.calls = failures, 0

        def execute(self, sql: str) -> None:
            self.calls += 1
            if self.calls <= self.failures:
                raise sqlite3.OperationalError("database is locked")

    waits_out = Busy(3)
    connection._switch_to_wal(waits_out)  # type: ignore[arg-type]
    assert waits_out.calls == 4
    monkeypatch.setattr(connection, "BUSY_TIMEOUT_SECONDS", 0.05)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        connection._switch_to_wal(Busy(10_000))  # type: ignore[arg-type]

    class Broken(Busy):
        def execute(self, sql: str) -> None:
            self.calls += 1
            raise sqlite3.OperationalError("disk I/O error")

    broken = Broken(0)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        connection._switch_to_wal(broken)  # type: ignore[arg-type]
    assert broken.calls == 1  # only a lock is waited out
