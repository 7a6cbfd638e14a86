"""`metis db status | migrate | copy` on both backends, and the backend switch (METIS_DATABASE_URL)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from session_samples import full_conversation
from store_backends import execute_on, scalar_on
from trace_samples import chain

from metis_core.errors import ConfigError, StoreError
from metis_core.store import SessionStore
from metis_core.store.backend import database_location, redact_url
from metis_core.store.copy import TABLES, copy_database
from metis_core.store.gateway_keys import SubjectLimits, open_gateway_key_store
from metis_core.store.schema_status import database_status, migrate_database
from metis_core.store.sqlite.migrations import SCHEMA_VERSION
from metis_core.trace import TraceStore


def _fill(location: Path | str, tmp_path: Path) -> tuple[str, int]:
    with SessionStore(location) as sessions:
        session = sessions.create_session(tmp_path, active_model="anthropic:x", title="Tést ✓")
        messages, _ = full_conversation(session.id)
        for message in messages:
            sessions.append_message(message)
    with TraceStore(location) as trace:
        trace.append_many(chain(session.id, 25))
    keys = open_gateway_key_store(location)
    try:
        keys.set_limits(SubjectLimits("team", "team_1", Decimal("12.345678901234"), "month", rpm=5))
        keys.add_spend("team", "team_1", 0, Decimal("0.000000123457"))
        keys.count_request("team", "team_1", 7)
    finally:
        keys.close()
    return session.id, len(messages)


def test_status_before_and_after_migrate(db_location: Path | str) -> None:
    before = database_status(db_location)
    assert before.version == 0 and len(before.pending) == SCHEMA_VERSION
    after = migrate_database(db_location)
    assert after.version == SCHEMA_VERSION and after.pending == ()
    assert after.applied_now == tuple(range(1, SCHEMA_VERSION + 1))
    again = migrate_database(db_location)  # idempotent
    assert again.applied_now == () and again.version == SCHEMA_VERSION
    assert any("0001 initial_schema" in line for line in again.lines())


def test_a_database_from_a_newer_metis_is_refused(db_location: Path | str) -> None:
    migrate_database(db_location)
    if isinstance(db_location, Path):
        execute_on(db_location, "PRAGMA user_version = 99")
    else:
        execute_on(db_location, "INSERT INTO schema_migrations (version, name) VALUES (99, 'future')")
    with pytest.raises(StoreError, match="newer than this metis"):
        database_status(db_location)
    with pytest.raises(StoreError, match="newer than this metis"):
        SessionStore(db_location)


def test_sqlite_copies_to_postgres_and_back_without_loss(tmp_path: Path, postgres_url: str) -> None:
    source = tmp_path / "source.db"
    session_id, message_count = _fill(source, tmp_path)
    report = copy_database(f"sqlite://{source}", postgres_url)
    counts = {t.name: t.rows for t in report.tables}
    assert counts["messages"] == message_count and counts["events"] == 25 and counts["sessions"] == 1
    with SessionStore(source) as original, SessionStore(postgres_url) as copied:
        assert copied.load_messages(session_id) == original.load_messages(session_id)
        assert copied.get_session(session_id) == original.get_session(session_id)
    back = tmp_path / "back.db"
    round_trip = copy_database(postgres_url, back)
    assert [(t.name, t.rows, t.sha256) for t in round_trip.tables] == [
        (t.name, t.rows, t.sha256) for t in report.tables
    ]
    assert {t.name for t in report.tables} == {spec.name for spec in TABLES}
    assert counts["gateway_spend"] == counts["gateway_limits"] == counts["gateway_minute"] == 1
    keys = open_gateway_key_store(postgres_url)
    try:
        assert keys.spent("team", "team_1", 0) == Decimal("0.000000123457")
        assert keys.limits("team", "team_1") == SubjectLimits("team", "team_1", Decimal("12.345678901234"), "month",
                                                               rpm=5)
    finally:
        keys.close()


def test_copy_into_a_database_that_holds_data_writes_nothing(tmp_path: Path, postgres_url: str) -> None:
    source = tmp_path / "source.db"
    _fill(source, tmp_path)
    other = tmp_path / "other.db"
    _fill(other, tmp_path)
    copy_database(other, postgres_url)
    events_before = scalar_on(postgres_url, "SELECT COUNT(*) FROM events")
    with pytest.raises(StoreError, match="already holds"):
        copy_database(source, postgres_url)
    assert scalar_on(postgres_url, "SELECT COUNT(*) FROM events") == events_before


def test_the_database_url_picks_the_backend(monkeypatch: pytest.MonkeyPatch, _isolated_home: Path) -> None:
    monkeypatch.delenv("METIS_DATABASE_URL", raising=False)
    assert database_location() == _isolated_home / "metis.db"
    (_isolated_home / "config.yaml").write_text("database_url: postgresql://u:secret@db.example/metis\n")
    assert database_location() == "postgresql://u:secret@db.example/metis"
    monkeypatch.setenv("METIS_DATABASE_URL", "sqlite:///tmp/x.db")
    assert database_location() == Path("/tmp/x.db")
    assert "secret" not in redact_url("postgresql://u:secret@db.example:5432/metis")


def test_a_url_of_another_database_is_refused_not_taken_for_a_file_name(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url in ("mysql://u:secret@db.example/metis", "postgresql+psycopg://db.example/metis"):
        with pytest.raises(ConfigError, match="postgresql://") as refused:
            database_status(url)
        assert "secret" not in str(refused.value)
    assert list(tmp_path.iterdir()) == []  # no SQLite file named after the URL


def test_step_7_links_replay_sessions_from_their_titles_on_either_backend(db_location: Path | str) -> None:
    """Both backends' step 7 (`replay_sessions`) add `replay_of` and backfill it the same way."""
    source, replay, renamed, itself = (f"sess_01JD{n}F5Q8ZK3X1V2W4Y6T7R9M0" for n in "ABCD")
    rows = [(source, "weather #billing"), (replay, f"replay of {source} on openai:gpt-4o"),
            (renamed, "replay of my notes on Tuesday"), (itself, f"replay of {itself} on x")]
    insert = ("INSERT INTO sessions (id, workspace_path, schema_version, created_at, updated_at, title) "
              "VALUES ({0}, '/w', 6, 1000, 2000, {0})")
    if isinstance(db_location, Path):  # a file left at version 6 by an older metis
        from metis_core.store.sqlite.connection import connect
        from metis_core.store.sqlite.migrations import migrate

        conn = connect(db_location)
        migrate(conn, db_location, up_to=6)
        conn.executemany(insert.format("?"), rows)
        conn.commit()
        conn.close()
    else:
        import psycopg

        from metis_core.store.postgres.migrations import migrate as migrate_postgres

        with psycopg.connect(db_location, autocommit=True) as pg:
            migrate_postgres(pg, "test", up_to=6)
            for row in rows:
                pg.execute(insert.format("%s"), row)
    with SessionStore(db_location) as store:
        assert [r.id for r in store.replays_of(source)] == [replay]
        assert [store.get_session(s).replay_of for s in (source, renamed, itself)] == [None, None, None]
        later = store.create_session("/w", replay_of=source)
        assert [r.id for r in store.replays_of(source)] == [replay, later.id]
