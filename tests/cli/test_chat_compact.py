"""`/compact` and `/pin` in `metis chat`: the older turns are summarised now, a pinned message stays
verbatim, the summarising call shows in `metis cost` (recorded Anthropic replies)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

from typer.testing import CliRunner

from metis_core.cli.app import app

from .cli_harness import cli_env, metis
from .replay_server import ANTHROPIC, ReplayServer, Reply

TEXT = Reply.recording("anthropic", "stream__text_basic.sse")
SUMMARY = Reply.recording("anthropic", "response__text.json")


def test_slash_compact_summarises_the_older_turns_keeps_the_pinned_one_and_the_call_is_charged(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yaml").write_text("compaction:\n  keep_last_turns: 1\n  pin_first_user_message: false\n")
    server.script(ANTHROPIC, TEXT, TEXT, TEXT, SUMMARY, TEXT)
    env = cli_env(home, server.base_url)
    done = metis(["chat"], env, workspace,
                 stdin="first question\nsecond question\n/pin\nthird question\n/compact\nfourth question\n")
    assert done.returncode == 0, done.stderr
    assert "pinned: 'second question'" in done.stdout
    assert "compacted: ~" in done.stdout and "4 messages summarised by anthropic:" in done.stdout
    bodies = server.bodies(ANTHROPIC)
    assert len(bodies) == 5 and "stream" not in bodies[3]  # the summarising call, then the fourth turn
    assert "first question" in json.dumps(bodies[3]["messages"])
    sent = bodies[4]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]  # the summary folded into the kept turn
    lead = json.dumps(sent[0])
    assert "[Summary of the earlier conversation]" in lead and "first question" not in json.dumps(sent)
    assert lead.index("[Pinned earlier messages, verbatim]") < lead.index("second question")  # pinned, verbatim
    assert lead.index("[The conversation goes on]") < lead.index("third question")  # the kept turn

    cost = CliRunner().invoke(app, ["cost", "--session", "latest", "--json"], env=env, catch_exceptions=False)
    assert cost.exit_code == 0, cost.stderr
    total = json.loads(cost.stdout)["total"]
    summary_cost = Decimal(re.search(r"summarised by \S+ · \$(\S+)", done.stdout).group(1))
    turn_costs = [Decimal(c) for c in re.findall(r"1 call · .* · \$(\S+) ·", done.stdout)]
    assert total["calls"] == 5 and len(turn_costs) == 4
    assert Decimal(total["cost_usd"]) == sum(turn_costs) + summary_cost > sum(turn_costs)
