"""`metis mcp list` against the real probe MCP server: servers, tools, skipped tools, secrets kept."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from .cli_harness import cli_env, metis

PROBE = Path(__file__).parents[1] / "agent" / "mcp" / "probe_server.py"


def test_mcp_list_shows_servers_tools_and_skips_without_printing_secrets(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    servers = {
        "probe": {"command": sys.executable, "args": [str(PROBE)], "env": {"PROBE_TOKEN": "env-secret-value-9"},
                  "tool_side_effects": {"add": "read"}},
        "broken": {"command": str(tmp_path / "no-such-server")},
        "off": {"url": "http://127.0.0.1:9/mcp", "enabled": False},
    }
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers}))
    done = metis(["mcp", "list"], cli_env(home, None), tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "probe__add" in out and "probe__greet" in out and "connected" in out
    assert "failed:" in out and "broken" in out
    assert "disabled: off" in out
    assert "probe__tally" in out and "not offered" in out
    assert "env-secret-value-9" not in out + done.stderr


def test_mcp_list_without_servers_says_where_to_add_them(tmp_path: Path) -> None:
    done = metis(["mcp", "list"], cli_env(tmp_path, None), tmp_path)
    assert done.returncode == 0 and "no MCP servers configured" in done.stdout


def test_metis_run_calls_an_mcp_tool_end_to_end(tmp_path: Path) -> None:
    from metis_core.cli.demo.anthropic_wire import message_stream, new_tool_use_id

    from .cli_harness import only_session_id, stored_events
    from .replay_server import ANTHROPIC, ReplayServer, Reply

    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"probe": {
        "command": sys.executable, "args": [str(PROBE)], "tool_side_effects": {"add": "read"}}}}))
    server = ReplayServer().start()
    try:
        server.script(ANTHROPIC, Reply(200, message_stream("claude-sonnet-4-6", text="Adding.", input_tokens=30,
                                                           tool_use=(new_tool_use_id(), "probe__add",
                                                                     {"a": 40, "b": 2}))),
                      Reply(200, message_stream("claude-sonnet-4-6", text="It is 42.", input_tokens=60)))
        done = metis(["run", "what is 40 + 2?"], cli_env(home, server.base_url), workspace, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "It is 42." in done.stdout
        second = server.bodies(ANTHROPIC)[1]
        assert "42" in str(second["messages"][-1]["content"])
        assert any(t["name"] == "probe__add" for t in second["tools"])
    finally:
        server.stop()
    events = stored_events(home, only_session_id(home))
    completed = [e for e in events if e.type == "tool.completed"]
    called = next(e for e in events if e.type == "tool.called")
    assert len(completed) == 1 and called.payload["tool_name"] == "probe__add"


def test_mcp_list_shows_why_a_server_crashed_its_exit_status_and_stderr(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    crashing = {"command": sys.executable,
                "args": ["-c", "import os, sys; print('Traceback (most recent call last):', file=sys.stderr); "
                               "print('token', os.environ['PROBE_TOKEN'], file=sys.stderr); "
                               "print('KeyError: PROBE_DB is not set', file=sys.stderr); sys.exit(2)"],
                "env": {"PROBE_TOKEN": "env-secret-value-7"}}
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"crashing": crashing}}))
    done = metis(["mcp", "list"], cli_env(home, None), tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())  # the table folds long cells
    assert "failed:" in out and "exited with status 2" in out and "KeyError: PROBE_DB is not set" in out
    assert "env-secret-value-7" not in out + done.stderr and "[redacted key]" in out
