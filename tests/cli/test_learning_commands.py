"""`metis feedback`, `metis eval run` and `metis patterns list|show|clear` in-process (CliRunner),
on a home seeded by one real `metis run` turn (see test_admin_commands.py), on each backend:
the home's SQLite file, and a PostgreSQL database named by METIS_DATABASE_URL (with a password
that must never be printed), where the learning tables then live too."""

from __future__ import annotations

from pathlib import Path

import pytest
from postgres_server import shared_server
from store_backends import BACKENDS, _postgres_session, scalar_on  # noqa: F401

from .cli_harness import stored_events
from .replay_server import ReplayServer
from .test_admin_commands import Cli, seeded_cli

PASSWORD = "learning-pw-never-shown"


@pytest.fixture(params=BACKENDS)
def cli(request: pytest.FixtureRequest, home: Path, server: ReplayServer, workspace: Path,
        monkeypatch: pytest.MonkeyPatch, _postgres_session: None) -> Cli:  # noqa: F811
    if request.param == "sqlite":
        return seeded_cli(home, server, workspace, monkeypatch)
    url = shared_server().fresh_database_url().replace("postgresql://metis@", f"postgresql://metis:{PASSWORD}@")
    runner = seeded_cli(home, server, workspace, monkeypatch, METIS_DATABASE_URL=url)
    runner.never_shown.append(PASSWORD)
    assert not (home / "metis.db").exists()  # sessions, trace and learning all went to PostgreSQL
    return runner


def test_feedback_on_a_turn_and_on_the_session(cli: Cli) -> None:
    sid = cli.session_id
    rated = cli("feedback", sid, "1", "down", "--comment", "wrong file")
    assert rated.exit_code == 0 and "recorded thumbs_down for turn " in rated.stdout
    whole = cli("feedback", sid, "up")
    assert whole.exit_code == 0 and f"recorded thumbs_up for session {sid}" in whole.stdout
    events = stored_events(cli.home, sid, learning=True, database=cli.database)
    explicit = [e for e in events if e.type == "feedback.explicit"]
    assert [(e.payload["scope"], e.payload["rating"]) for e in explicit] == [("turn", "thumbs_down"),
                                                                           ("session", "thumbs_up")]
    ended = next(e for e in events if e.type == "session.ended")
    assert explicit[1].parent_event_id == ended.id
    triggers = [e.payload["trigger"] for e in events if e.type == "eval.started"]
    assert triggers.count("feedback_arrived") == 3  # the turn; the session, and its recorded turn again
    missing = cli("feedback", sid, "9", "up")
    assert missing.exit_code != 0 and "has 1 turn(s), not 9" in missing.stderr


def test_eval_run_scores_what_has_no_verdict_and_again_rescoring(cli: Cli) -> None:
    first = cli("eval", "run", "--since", "1d")
    assert first.exit_code == 0 and first.stdout.startswith("evaluated 0 subject(s)")
    verdicts = scalar_on(cli.database, "SELECT COUNT(*) FROM eval_verdicts")
    again = cli("eval", "run", "--again")
    assert again.exit_code == 0 and "evaluated 2 subject(s): 2 verdict(s), 0 failed" in again.stdout
    assert scalar_on(cli.database, "SELECT COUNT(*) FROM eval_verdicts") == int(str(verdicts)) + 2
    bad = cli("eval", "run", "--since", "last tuesday")
    assert bad.exit_code == 2 and "neither an age" in bad.stderr


def test_patterns_list_show_and_clear(cli: Cli) -> None:
    listed = cli("patterns", "list")  # not a terminal: one tab-separated row per fingerprint, no totals
    assert listed.exit_code == 0 and len(listed.stdout.splitlines()) == 1 and "lead=write" in listed.stdout
    events = stored_events(cli.home, cli.session_id, learning=True, database=cli.database)
    fingerprint_id = next(e for e in events if e.type == "pattern.recorded").payload["fingerprint_id"]
    assert listed.stdout.split("\t")[0] == fingerprint_id
    shown = cli("patterns", "show", fingerprint_id)
    assert shown.exit_code == 0 and "anthropic:claude" in shown.stdout
    assert cli("patterns", "show", "nope").exit_code == 2
    cleared = cli("patterns", "clear", "--yes")
    assert cleared.exit_code == 0 and "cleared 1 outcome(s)" in cleared.stdout
    assert cli("patterns", "list").stdout == ""


def test_feedback_after_the_session_ended_rescores_its_pattern_outcome(cli: Cli) -> None:
    before = scalar_on(cli.database, "SELECT score FROM pattern_outcomes")
    assert cli("feedback", cli.session_id, "1", "down").exit_code == 0
    assert scalar_on(cli.database, "SELECT score FROM pattern_outcomes") == 0.05 != before
    assert "0.05 · 1" in cli("patterns", "list").stdout
    assert cli("feedback", cli.session_id, "1", "up").exit_code == 0
    assert scalar_on(cli.database, "SELECT score FROM pattern_outcomes") == 0.95
    events = stored_events(cli.home, cli.session_id, learning=True, database=cli.database)
    rescored = [e.payload["success_score"] for e in events if e.type == "pattern.recorded"]
    assert rescored[-2:] == [0.05, 0.95]


def test_rating_a_whole_finished_session_rescores_its_turn(cli: Cli) -> None:
    assert cli("feedback", cli.session_id, "down").exit_code == 0  # no TURN: the whole session
    assert scalar_on(cli.database, "SELECT score FROM pattern_outcomes") == 0.05
