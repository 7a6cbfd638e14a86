"""`metis run` with delegation tiers configured: the planner delegates, the worker answers, and
`metis trace tree` draws the worker's events under the planner's delegate.started."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from metis_core.cli.demo.anthropic_wire import message_stream, new_tool_use_id

from .cli_harness import cli_env, metis, stored_events
from .replay_server import ANTHROPIC, ReplayServer, Reply


def test_run_delegates_and_trace_tree_nests_the_worker(home: Path, server: ReplayServer, workspace: Path) -> None:
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text(yaml.safe_dump({"delegation": {"tiers": {"fast": "anthropic:claude-haiku-4-5"}}}))
    server.script(
        ANTHROPIC,
        Reply(200, message_stream("claude-sonnet-4-6", text="Delegating.", input_tokens=50, tool_use=(
            new_tool_use_id(), "delegate", {"task": "name three primes", "tier": "fast"}))),
        Reply(200, message_stream("claude-haiku-4-5", text="2, 3 and 5.", input_tokens=40)),
        Reply(200, message_stream("claude-sonnet-4-6", text="The worker says: 2, 3 and 5.", input_tokens=90)),
    )
    done = metis(["run", "--json", "name three primes, delegate it"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    bodies = server.bodies(ANTHROPIC)
    assert [b["model"] for b in bodies] == ["claude-sonnet-4-6", "claude-haiku-4-5", "claude-sonnet-4-6"]
    assert "2, 3 and 5." in str(bodies[2]["messages"][-1]["content"])

    planner = json.loads(done.stdout)["session_id"]
    started = next(e for e in stored_events(home, planner) if e.type == "delegate.started")
    worker = started.payload["worker_session_id"]
    tree = metis(["trace", "tree", planner], cli_env(home, server.base_url), workspace)
    assert tree.returncode == 0, tree.stderr
    lines = tree.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if "delegate.started" in line)
    depth = lines[at].index("delegate.started")
    below = lines[at + 1:]
    assert f"worker session {worker}" in below[0] and below[0].index("worker session") > depth
    worker_call = next(line for line in below if "llm.call_started" in line)
    assert worker_call.index("llm.call_started") > depth and "claude-haiku-4-5" in worker_call
