"""`metis replay` in a subprocess: a session recorded by `metis run`, replayed on another provider
(JSON report, the session linked by replay_of in `sessions show`, turn.replay_diverged, the OpenWOP
export), then `--sessions` as a table.
"""

from __future__ import annotations

import json
from pathlib import Path

from .cli_harness import assert_no_key, cli_env, metis, only_session_id, stored_events
from .replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply


def record_session(home: Path, server: ReplayServer, workspace: Path) -> str:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["run", "--json", "Say hello"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    return only_session_id(home)


def test_replay_on_another_provider_reports_json_links_the_session_and_exports_the_divergence(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    source = record_session(home, server, workspace)
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    done = metis(["replay", source, "--model", "openai:gpt-4o", "--json"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    assert_no_key(done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert report["source_session_id"] == source and report["model"] == "openai:gpt-4o"
    [turn] = report["turns"]
    assert turn["original"]["answer"] == "Hello there!" and turn["replay"]["answer"].startswith("I'm unable")
    assert turn["first_divergence"]["point"] == "text" and turn["text_similarity"] < 0.8
    assert turn["original"]["model"] == "anthropic:claude-sonnet-4-6" and turn["replay"]["model"] == "openai:gpt-4o"
    assert report["summary"]["divergence_rate"] == 1.0

    linked = report["replay_session_id"]
    assert report["replay_of"] == source
    shown = metis(["sessions", "show", linked], cli_env(home, None), workspace)
    assert shown.returncode == 0 and f"replay of session {source}" in shown.stdout, shown.stderr
    shown = metis(["sessions", "show", source], cli_env(home, None), workspace)
    assert f"replayed as {linked}" in shown.stdout
    shown = metis(["sessions", "show", linked, "--json"], cli_env(home, None), workspace)
    assert json.loads(shown.stdout)["session"]["replay_of"] == source
    events = stored_events(home, linked)
    diverged = [e for e in events if e.type == "turn.replay_diverged"]
    assert [e.payload["source_session_id"] for e in diverged] == [source]
    exported = metis(["trace", "export", linked, "--format", "openwop"], cli_env(home, None), workspace)
    assert exported.returncode == 0, exported.stderr
    documents = [json.loads(line) for line in exported.stdout.splitlines() if line.strip()]
    [document] = [d for d in documents if d["type"] == "replay.diverged"]
    assert document["payload"]["divergenceKind"] == "output"
    assert document["payload"]["divergencePoint"] == "node.completed"


def test_replay_over_sessions_prints_a_table_and_a_summary(home: Path, server: ReplayServer, workspace: Path) -> None:
    record_session(home, server, workspace)
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["replay", "--sessions", "hello", "--model", "anthropic:claude-haiku-4-5"],
                 cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    assert "0 of 1 turn(s) diverged (0%)" in done.stdout
    assert "sessions matching 'hello'" in done.stdout


def test_replay_refuses_a_bad_turn_range_by_name(home: Path, server: ReplayServer, workspace: Path) -> None:
    source = record_session(home, server, workspace)
    done = metis(["replay", source, "--model", "openai:gpt-4o", "--turns", "2..3"], cli_env(home, server.base_url),
                 workspace)
    assert done.returncode != 0
    assert "--turns 2..3 is outside session" in done.stderr


def test_replay_prints_the_turn_table_in_the_terminal(home: Path, server: ReplayServer, workspace: Path) -> None:
    source = record_session(home, server, workspace)
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    done = metis(["replay", source, "--model", "openai:gpt-4o"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    for heading in ("original tools", "replay tools", "text sim.", "first divergence"):
        assert heading in done.stdout
    assert "text @ call 0" in done.stdout and "1 of 1 turn(s) diverged (100%)" in done.stdout


def test_replay_resends_the_run_options_and_an_old_session_says_what_it_lacks(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    import sqlite3

    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["run", "--json", "-o", "temperature=0.2", "-o", "max_tokens=99", "Say hello"],
                 cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    source = only_session_id(home)
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    done = metis(["replay", source, "--model", "openai:gpt-4o"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    sent = server.bodies(OPENAI)[-1]
    assert sent["temperature"] == 0.2 and 99 in (sent.get("max_completion_tokens"), sent.get("max_tokens"))
    assert "request options" not in done.stderr

    with sqlite3.connect(home / "metis.db") as conn:  # as if recorded before options were kept
        conn.execute("UPDATE events SET payload_json = json_remove(payload_json, '$.request_options') "
                     "WHERE session_id = ? AND type = 'llm.call_started'", (source,))
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    done = metis(["replay", source, "--model", "openai:gpt-4o"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    assert "temperature" not in server.bodies(OPENAI)[-1]
    assert "turn 1: request options: not recorded (the session predates them)" in " ".join(done.stderr.split())


def test_a_replayed_turn_with_an_unpriced_call_shows_its_cost_as_unknown() -> None:
    from decimal import Decimal

    from rich.console import Console

    from metis_core.cli.replay import _summary_line, turn_table
    from metis_core.replay.session_replay import ReplayReport, TurnComparison
    from metis_core.replay.source import TurnSide

    turn = TurnComparison(index=1, source_turn_id="t1", replay_turn_id="t2", user_text="hi",
                          original=TurnSide(model="a", steps=[[]], answer="x", cost_usd=Decimal("0.0123")),
                          replay=TurnSide(model="local", steps=[[]], answer="x", cost_usd=None))
    report = ReplayReport(source_session_id="s1", replay_session_id="s2", model="local", live_tools=False,
                          turns=[turn])
    console = Console(width=200, record=True)
    console.print(turn_table(report))
    table = console.export_text()
    assert "$0.0123 → cost unknown" in table and "$0 " not in table
    assert _summary_line(report.summary()).endswith("cost $0.0123 → cost unknown")
