"""`metis patterns explain TURN` and `metis learn` in-process, on a home seeded by one real
`metis run` turn (test_admin_commands.py's harness)."""

from __future__ import annotations

import json

from .test_admin_commands import Cli, cli  # noqa: F401


def test_patterns_explain_shows_the_chain_the_pattern_and_its_posterior(cli: Cli) -> None:  # noqa: F811
    shown = cli("patterns", "explain", "latest")
    assert shown.exit_code == 0, shown.stderr
    assert "by routing" in shown.stdout and "global_default" in shown.stdout
    assert "pattern " in shown.stdout and "lead=write" in shown.stdout and "Beta(" in shown.stdout
    data = json.loads(cli("patterns", "explain", "latest", "--json").stdout)
    (model,) = data["fall_evidence"]
    assert f"share of a change (1 moves its routes): {model} 0.00" in shown.stdout
    assert data["exploration"] is False and data["chain"][3]["policy"] == "pattern"
    (posterior,) = data["posteriors"]
    assert posterior["outcomes"] == 1 and posterior["learned"] == 0 and posterior["alpha"] > 1
    again = cli("patterns", "explain", data["turn_id"][:8])
    assert again.exit_code == 0 and data["turn_id"] in again.stdout
    missing = cli("patterns", "explain", "ZZZZ")
    assert missing.exit_code == 2 and "no routed turn ZZZZ" in missing.stderr


def test_learn_needs_a_judge_then_shows_its_plan_and_cost_on_a_dry_run(cli: Cli) -> None:  # noqa: F811
    refused = cli("learn", "--candidates", "anthropic:claude-haiku-4-5", "--dry-run")
    assert refused.exit_code != 0 and "learning.judge_model" in refused.stderr
    (cli.home / "config.yaml").write_text("learning:\n  judge_model: anthropic:claude-haiku-4-5\n")
    dry = cli("learn", "--candidates", "anthropic:claude-haiku-4-5", "--dry-run", "--json", "--budget-usd", "0.5")
    assert dry.exit_code == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["dry_run"] and report["planned"] == 1 and report["replayed"] == 0
    assert 0 < float(report["estimated_usd"]) < 0.01 and report["spent_usd"] == "0"
    shown = cli("learn", "--candidates", "anthropic:claude-haiku-4-5", "--dry-run")
    assert "plan: 1 replay(s) on anthropic:claude-haiku-4-5, estimated $0.00" in shown.stdout
    bad = cli("learn", "--budget-usd", "lots")
    assert bad.exit_code == 2 and "not an amount" in bad.stderr
