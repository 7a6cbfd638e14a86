"""sessions / trace / backup / restore / audit / models / cost, run in-process with typer's CliRunner.

Each test seeds METIS_HOME with one real `metis run` turn against recorded Anthropic traffic
(the tool_use recording turned into a write_file call, denied because there is no terminal —
which writes an audit event — then stream__text_basic.sse) and checks the command's output
against the store and the trace.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from metis_core.cli.app import app
from metis_core.store.sessions import SessionStore
from metis_core.trace.audit import CSV_COLUMNS
from metis_core.trace.store import TraceStore

from .cli_harness import assert_no_key, cli_env, json_lines, stored_events, write_file_call_stream
from .replay_server import ANTHROPIC, ReplayServer, Reply


class Cli:
    def __init__(self, home: Path, server: ReplayServer, workspace: Path, **env: str) -> None:
        self.home, self.workspace = home, workspace
        self.env = cli_env(home, server.base_url, **env)
        self.database: Path | str = env.get("METIS_DATABASE_URL") or home / "metis.db"
        """Where the commands' stores live (METIS_DATABASE_URL when given)."""
        self.runner = CliRunner()
        self.session_id = ""
        self.never_shown: list[str] = []
        """Secrets (e.g. the database password) no output may contain."""

    def __call__(self, *args: str) -> Result:
        result = self.runner.invoke(app, list(args), env=self.env, catch_exceptions=False)
        assert_no_key(result.stdout, result.stderr)
        assert not [s for s in self.never_shown if s in result.stdout or s in result.stderr]
        return result


def seeded_cli(home: Path, server: ReplayServer, workspace: Path, monkeypatch: pytest.MonkeyPatch,
               **env: str) -> Cli:
    """A Cli whose home (and database, with METIS_DATABASE_URL in `env`) holds one `metis run` turn."""
    monkeypatch.chdir(workspace)
    server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "x")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    runner = Cli(home, server, workspace, **env)
    seeded = runner("run", "--json", "write a note")
    assert seeded.exit_code == 0, seeded.stderr
    runner.session_id = json.loads(seeded.stdout)["session_id"]
    return runner


@pytest.fixture
def cli(home: Path, server: ReplayServer, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    return seeded_cli(home, server, workspace, monkeypatch)


def event_count(home: Path) -> int:
    with TraceStore(home / "metis.db") as trace:
        return trace.count()


def test_sessions_list_show_export_and_import_round_trip(cli: Cli, tmp_path: Path) -> None:
    sid = cli.session_id
    listed = json.loads(cli("sessions", "list", "--json").stdout)
    assert [s["id"] for s in listed] == [sid] and listed[0]["title"] == "write a note"
    assert listed[0]["total_cost_usd"] == "0.002229"  # 377+11 in, 65+6 out at sonnet 4.6 prices
    shown = cli("sessions", "show", sid).stdout
    assert '→ write_file {"path": "notes.txt", "content": "x"}' in shown
    assert "← error: error: write_file was not run: no terminal to ask for confirmation" in shown
    assert "Hello there!" in shown
    export_file = tmp_path / "session.json"
    assert cli("sessions", "export", sid, "--output", str(export_file)).exit_code == 0
    assert json.loads(export_file.read_text())["session"]["id"] == sid
    again = cli("sessions", "import", str(export_file))
    assert again.exit_code == 6 and again.stderr.startswith("error: session ") and "already exists" in again.stderr
    copied = cli("sessions", "import", "--as-new", str(export_file))
    assert copied.exit_code == 0 and "(4 messages)" in copied.stdout
    with SessionStore(cli.home / "metis.db") as store:
        assert len(store.list_sessions()) == 2
    assert cli("sessions", "show", "sess_nope").exit_code == 6


def test_trace_tree_shows_model_tokens_cost_and_latency_per_call(cli: Cli) -> None:
    sid = cli.session_id
    tree = cli("trace", "tree", sid).stdout
    assert tree.startswith(f"session {sid}")
    assert "llm.call_completed  anthropic:claude-sonnet-4-6 · 377 in / 65 out tokens · $0.002106 · " in tree
    assert "llm.call_completed  anthropic:claude-sonnet-4-6 · 11 in / 6 out tokens · $0.000123 · " in tree
    assert " ms · end_turn" in tree and "tool.failed  permission_denied" in tree
    replayed = json_lines(cli("trace", "replay", sid).stdout)
    assert [e["id"] for e in replayed] == [e.id for e in stored_events(cli.home, sid, learning=True)]
    assert "tool.confirmation_resolved" in cli("trace", "show", sid).stdout
    assert cli("trace", "tree", "sess_nope").exit_code == 6


def test_prune_dry_run_only_counts_and_a_real_prune_keeps_audit_events(cli: Cli) -> None:
    before = event_count(cli.home)
    dry = cli("trace", "prune", "--retention-days", "0", "--dry-run")
    assert dry.exit_code == 0 and dry.stdout.startswith(f"would delete {before - 1} events older than ")
    assert event_count(cli.home) == before
    real = cli("trace", "prune", "--retention-days", "0")
    assert real.stdout.startswith(f"deleted {before - 1} events") and "kept 1 older audit events" in real.stdout
    with TraceStore(cli.home / "metis.db") as trace:
        assert sorted(e.type for e in trace.events()) == ["tool.confirmation_resolved", "trace.swept"]
    assert cli("trace", "prune", "--retention-days", "-1").exit_code == 2


def test_audit_export_writes_jsonl_and_csv_filtered_by_type_and_time(cli: Cli) -> None:
    records = json_lines(cli("audit", "export", "--format", "jsonl").stdout)
    assert [r["type"] for r in records] == ["tool.confirmation_resolved"]
    assert records[0]["payload"]["decision"] == "deny" and records[0]["session_id"] == cli.session_id
    rows = list(csv.reader(io.StringIO(cli("audit", "export", "--format", "csv").stdout)))
    assert tuple(rows[0]) == CSV_COLUMNS and rows[1][6] == "tool.confirmation_resolved"
    assert cli("audit", "export", "--type", "trace.swept").stdout == ""
    assert cli("audit", "export", "--since", "2999-01-01").stdout == ""
    assert cli("audit", "export", "--since", "yesterday").exit_code == 2
    wrong = cli("audit", "export", "--type", "turn.started")
    assert wrong.exit_code == 6 and "not audit event types: turn.started" in wrong.stderr


def test_backup_and_restore_round_trip_and_restore_refuses_without_force(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "backup.db"
    made = cli("backup", str(target))
    assert made.exit_code == 0 and f"dest: {target}" in made.stdout
    assert f"event_count: {event_count(cli.home)}" in made.stdout
    assert cli("backup", str(target)).exit_code == 6  # exists, no --force
    with SessionStore(cli.home / "metis.db") as store:
        store.create_session(cli.workspace, title="made after the backup")
    refused = cli("restore", str(target))
    assert refused.exit_code == 6 and "--force" in refused.stderr
    assert cli("restore", str(target), "--force").exit_code == 0
    with SessionStore(cli.home / "metis.db") as store:
        assert [s.id for s in store.list_sessions()] == [cli.session_id]
    assert cli("restore", str(tmp_path / "missing.db"), "--force").exit_code == 6


def test_models_lists_capabilities_and_prices(cli: Cli) -> None:
    # Not a terminal: one tab-separated row per model, whole ids, no table frame.
    listed = [line.split("\t") for line in cli("models", "--provider", "anthropic").stdout.splitlines()]
    assert listed and all(row[0].startswith("anthropic:") and len(row) == 8 for row in listed)
    sonnet_row = next(row for row in listed if row[0] == "anthropic:claude-sonnet-4-6")
    assert sonnet_row[5:] == ["3", "15", "sonnet"]
    rows = {row["id"]: row for row in json.loads(cli("models", "--json").stdout)}
    sonnet = rows["anthropic:claude-sonnet-4-6"]
    assert sonnet["price_per_million"]["input"] == "3" and sonnet["price_per_million"]["output"] == "15"
    assert sonnet["capabilities"]["supports_images"] is True and sonnet["aliases"] == ["sonnet"]
    assert rows["openai:gpt-3.5-turbo"]["capabilities"]["supports_images"] is False


def test_cost_groups_spend_by_session_model_and_day(cli: Cli) -> None:
    document = json.loads(cli("cost", "--json").stdout)
    assert document["total"] == {"key": "total", "calls": 2, "input_tokens": 388, "output_tokens": 71,
                                 "cost_usd": "0.002229", "unpriced_calls": 0}
    assert [r["key"] for r in document["model"]] == ["anthropic:claude-sonnet-4-6"]
    assert [r["key"] for r in document["session"]] == [cli.session_id]
    assert len(document["day"]) == 1
    piped = cli("cost").stdout.splitlines()  # not a terminal: one tab-separated line per row, the grouping first
    assert "model\tanthropic:claude-sonnet-4-6\t2\t388\t71\t$0.002229" in piped
    assert piped[-1] == "total\t\t2\t388\t71\t$0.002229"
    assert cli("cost", "--session", "sess_nope").exit_code == 6


def test_trace_export_writes_each_interop_format(cli: Cli, tmp_path: Path) -> None:
    from metis_core.export import verify_event_log

    otel = cli("trace", "export", cli.session_id, "--format", "otel")
    assert otel.exit_code == 0, otel.stderr
    spans = [span for rs in json.loads(otel.stdout)["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]
    assert any(span["name"].startswith("chat ") for span in spans)
    assert "exported" in otel.stderr and "otel document(s)" in otel.stderr

    log_path = tmp_path / "session.eventlog.jsonl"
    logged = cli("trace", "export", cli.session_id, "--format", "eventlog", "--out", str(log_path))
    assert logged.exit_code == 0 and str(log_path) in logged.stderr
    assert verify_event_log(log_path.read_text().splitlines()).ok
    assert "write a note" not in log_path.read_text()  # content redacted unless asked for

    openwop = cli("trace", "export", cli.session_id, "--format", "openwop")
    assert openwop.exit_code == 0 and json_lines(openwop.stdout)

    unknown = cli("trace", "export", cli.session_id, "--format", "yaml")
    assert unknown.exit_code == 2 and "unknown export format" in unknown.stderr
