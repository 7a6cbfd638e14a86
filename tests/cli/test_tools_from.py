"""`--tools-from` and config `tool_modules`: a module's @tool functions offered to the model from the CLI.

The real `metis` runs against recorded Anthropic traffic on 127.0.0.1; the tool_use recording is
turned into calls of the module's tools (support_servers.tool_call_stream).
"""

from __future__ import annotations

import json
from pathlib import Path

from support_servers import tool_call_stream

from metis_core.messages import Role

from .cli_harness import PtySession, cli_env, metis, only_session_id, stored_events, stored_messages
from .replay_server import ANTHROPIC, ReplayServer, Reply

TOOLS = '''
"""Tools for the CLI test."""
from typing import Annotated
from pydantic import Field
from metis_core import tool


@tool(side_effects="none")
def add(a: int, b: Annotated[int, Field(ge=0)] = 0) -> dict:
    """Add two integers.

    Args:
        a: The first.
        b: The second, not negative.
    """
    return {"sum": a + b}


@tool(side_effects="write")
def shout(text: str) -> str:
    """Upper-case a text."""
    raise RuntimeError("the shouting tool is broken")
'''


def _module(tmp_path: Path) -> Path:
    path = tmp_path / "my_tools.py"
    path.write_text(TOOLS)
    return path


def test_run_offers_the_modules_tools_and_runs_a_call(
    home: Path, server: ReplayServer, workspace: Path, tmp_path: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, tool_call_stream("add", {"a": 2, "b": 3})),
                  Reply(200, tool_call_stream("add", {"a": 2, "b": -1}, "toolu_second")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["run", "--json", "--tools-from", str(_module(tmp_path)), "add 2 and 3"],
                 cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["usage"]["tool_calls"] == 2
    sent = {t["name"]: t for t in server.bodies(ANTHROPIC)[0]["tools"]}
    assert {"add", "shout", "read_file"} <= set(sent)  # the module's tools beside the built-in ones
    assert sent["add"]["input_schema"]["properties"]["b"] == {
        "type": "integer", "description": "The second, not negative. Default: 0.", "minimum": 0}
    session_id = only_session_id(home)
    results = [m.tool_results()[0] for m in stored_messages(home, session_id) if m.role is Role.TOOL]
    assert json.loads(results[0].text()) == {"sum": 5}
    assert results[1].is_error and "$.b: -1 is less than the minimum of 0" in results[1].text()
    invalid = [e for e in stored_events(home, session_id) if e.type == "tool.input_invalid"]
    assert [e.payload["tool_name"] for e in invalid] == ["add"]


def test_config_tool_modules_are_loaded_relative_to_metis_home(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    home.mkdir()
    (home / "tools").mkdir()
    (home / "tools" / "mine.py").write_text(TOOLS)
    (home / "config.yaml").write_text("tool_modules:\n  - tools/mine.py\n")
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["run", "hi"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    assert "add" in {t["name"] for t in server.bodies(ANTHROPIC)[0]["tools"]}


def test_a_tools_module_that_cannot_load_exits_2_with_the_reason(
    home: Path, server: ReplayServer, workspace: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_anywhere\n")
    done = metis(["run", "--tools-from", str(broken), "hi"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 2
    assert "cannot load tools from" in done.stderr and "No module named 'no_such_module_anywhere'" in done.stderr
    assert "Traceback" not in done.stderr and server.requests == []


def test_chat_runs_a_module_tool_that_raises_and_goes_on(
    home: Path, server: ReplayServer, workspace: Path, tmp_path: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, tool_call_stream("shout", {"text": "hi"})),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    term = PtySession(["chat", "--tools-from", str(_module(tmp_path))], cli_env(home, server.base_url), workspace)
    try:
        term.expect(r"you> ")
        term.type("shout hi")
        term.expect(r"confirm> ")
        term.type("y")
        shown = term.expect(r"Hello there!")
        assert "✗ shout" in shown and "RuntimeError: the shouting tool is broken" in shown
        term.expect(r"you> ")
        term.type("/exit")
        assert term.wait() == 0
    finally:
        term.close()
    failed = [e for e in stored_events(home, only_session_id(home)) if e.type == "tool.failed"]
    assert [e.payload["error_class"] for e in failed] == ["execution_error"]
