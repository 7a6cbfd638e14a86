"""The whole CLI on PostgreSQL (METIS_DATABASE_URL): a real turn, then sessions, trace, audit,
backup, `metis db status | migrate | copy` — and the URL's password never printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_backends import _postgres_session, postgres_url  # noqa: F401
from typer.testing import CliRunner, Result

from metis_core.cli.app import app
from metis_core.store import SessionStore
from metis_core.store.sqlite.migrations import SCHEMA_VERSION
from metis_core.trace import TraceStore

from .cli_harness import assert_no_key, cli_env, write_file_call_stream
from .replay_server import ANTHROPIC, ReplayServer, Reply

PASSWORD = "s3cret-pw-never-shown"


def _with_password(url: str) -> str:
    return url.replace("postgresql://metis@", f"postgresql://metis:{PASSWORD}@")


class PgCli:
    def __init__(self, home: Path, server: ReplayServer, url: str) -> None:
        self.url = url
        self.env = cli_env(home, server.base_url, METIS_DATABASE_URL=url)
        self.runner = CliRunner()

    def __call__(self, *args: str) -> Result:
        result = self.runner.invoke(app, list(args), env=self.env, catch_exceptions=False)
        assert_no_key(result.stdout, result.stderr)
        assert PASSWORD not in result.stdout and PASSWORD not in result.stderr
        return result


@pytest.fixture
def pg_cli(home: Path, server: ReplayServer, workspace: Path, postgres_url: str,  # noqa: F811
           monkeypatch: pytest.MonkeyPatch) -> PgCli:
    monkeypatch.chdir(workspace)
    server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "x")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    return PgCli(home, server, _with_password(postgres_url))


def test_a_turn_and_the_admin_commands_run_on_postgres(pg_cli: PgCli, home: Path, tmp_path: Path) -> None:
    seeded = pg_cli("run", "--json", "write a note")
    assert seeded.exit_code == 0, seeded.stderr
    sid = json.loads(seeded.stdout)["session_id"]
    assert not (home / "metis.db").exists() or not SessionStore(home / "metis.db").list_sessions()
    with SessionStore(pg_cli.url) as store:
        assert [s.id for s in store.list_sessions()] == [sid]
    with TraceStore(pg_cli.url) as trace:
        types = [e.type for e in trace.replay(sid)]
    assert types[0] == "session.created" and "turn.completed" in types

    listed = json.loads(pg_cli("sessions", "list", "--json").stdout)
    assert [s["id"] for s in listed] == [sid] and listed[0]["total_cost_usd"] == "0.002229"
    audit = pg_cli("audit", "export").stdout.splitlines()
    assert [json.loads(line)["type"] for line in audit] == ["tool.confirmation_resolved"]
    assert pg_cli("trace", "prune", "--retention-days", "0", "--dry-run").stdout.startswith("would delete ")

    status = pg_cli("db", "status").stdout
    assert "backend: postgres" in status and f"schema_version: {SCHEMA_VERSION}" in status and "***" in status
    assert "pending" not in pg_cli("db", "migrate").stdout

    dump = tmp_path / "pg.dump"
    backed = pg_cli("backup", str(dump))
    assert backed.exit_code == 0 and dump.read_bytes().startswith(b"PGDMP")
    copied_to = tmp_path / "copy.db"
    copied = pg_cli("db", "copy", "--from", pg_cli.url, "--to", f"sqlite://{copied_to}")
    assert copied.exit_code == 0, copied.stderr
    assert "events:" in copied.stdout and "(identical)" in copied.stdout
    with SessionStore(copied_to) as store, SessionStore(pg_cli.url) as original:
        assert store.load_messages(sid) == original.load_messages(sid)


def test_an_unreachable_server_is_a_named_storage_error(home: Path, server: ReplayServer) -> None:
    cli = PgCli(home, server, f"postgresql://metis:{PASSWORD}@127.0.0.1:9/metis")
    result = cli("sessions", "list")
    assert result.exit_code == 6
    assert "could not open the connection" in result.stderr and "***" in result.stderr
