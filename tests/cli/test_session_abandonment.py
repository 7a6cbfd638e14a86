"""The next `metis run` ends sessions left open past sessions.inactivity_timeout_hours as `abandoned`
(a crashed chat never wrote session.ended); its own session ends `completed` as usual."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metis_core.cli.app import app
from metis_core.store.sessions import SessionStore

from .cli_harness import cli_env, stored_events
from .replay_server import ANTHROPIC, ReplayServer, Reply


def test_the_next_run_ends_a_session_left_open_past_the_timeout_as_abandoned(
    server: ReplayServer, home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("sessions:\n  inactivity_timeout_hours: 0.0001\n")  # 0.36 s
    with SessionStore(home / "metis.db") as store:
        crashed = store.create_session(workspace, "anthropic:claude-sonnet-4-6").id
    time.sleep(0.5)
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    done = CliRunner().invoke(app, ["run", "--json", "hi"], env=cli_env(home, server.base_url))
    assert done.exit_code == 0, done.stderr
    ran = json.loads(done.stdout)["session_id"]
    with SessionStore(home / "metis.db") as store:
        assert store.get_session(crashed).disposition == "abandoned"
        assert store.get_session(ran).disposition == "completed"
    ended = [e for e in stored_events(home, crashed) if e.type == "session.ended"]
    assert [e.payload["disposition"] for e in ended] == ["abandoned"] and ended[0].payload["turn_count"] == 0
