"""`metis run` then `metis feedback` as the only feedback a user gives: after a few proofs the
cheap model got wrong (rated down) and the strong one got right (rated up), pattern routing sends
the next proof to the strong one, though routing.yaml's default is the cheap one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .cli_harness import stored_events
from .replay_server import ANTHROPIC, ReplayServer, Reply
from .test_admin_commands import Cli

CHEAP, STRONG = "anthropic:claude-haiku-4-5", "anthropic:claude-sonnet-4-6"
ROUNDS = 4


def test_feedback_from_the_shell_moves_proofs_off_the_model_rated_down(
    home: Path, server: ReplayServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)
    home.mkdir()
    (home / "routing.yaml").write_text(f"default: {CHEAP}\n")
    server.script(ANTHROPIC, *[Reply.recording("anthropic", "stream__text_basic.sse")] * (2 * ROUNDS + 1))
    cli = Cli(home, server, workspace)
    for _ in range(ROUNDS):
        for model, rating in ((CHEAP, "down"), (STRONG, "up")):
            ran = cli("run", "--json", "-m", model, "prove that 19 is prime")
            assert ran.exit_code == 0, ran.stderr
            assert cli("feedback", json.loads(ran.stdout)["session_id"], "1", rating).exit_code == 0
    ran = cli("run", "--json", "prove that 23 is prime")
    assert ran.exit_code == 0, ran.stderr
    events = stored_events(home, json.loads(ran.stdout)["session_id"], learning=True)
    decided = next(e for e in events if e.type == "route.decided")
    winner = decided.payload["chain"][decided.payload["winner_index"]]
    assert decided.payload["chosen_model"] == STRONG and winner["policy"] == "pattern"
    assert f"scored best per dollar on {ROUNDS} similar turns" in winner["reason"]
    assert "prove" in cli("patterns", "list").stdout
