"""`metis sessions export` after the agent called the memory tool: the memory text it wrote is
withheld (a hash in its place), the rest of the call stays, and the document still imports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support_servers import tool_call_stream

from .replay_server import ANTHROPIC, ReplayServer, Reply
from .test_admin_commands import Cli

NOTE = "the deploy key lives in vault path ops/deploy-7731"


def test_sessions_export_withholds_what_the_memory_tool_wrote(
    home: Path, server: ReplayServer, workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(workspace)
    server.script(ANTHROPIC,
                  Reply(200, tool_call_stream("memory", {"file": "MEMORY.md", "action": "add", "text": NOTE})),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    cli = Cli(home, server, workspace)
    ran = cli("run", "--json", "remember where the deploy key is")
    assert ran.exit_code == 0, ran.stderr
    sid = json.loads(ran.stdout)["session_id"]
    assert NOTE in (workspace / ".metis" / "MEMORY.md").read_text()  # the tool ran
    exported = cli("sessions", "export", sid)
    assert exported.exit_code == 0 and NOTE not in exported.stdout and "deploy-7731" not in exported.stdout
    document = json.loads(exported.stdout)
    (use,) = [b for m in document["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert use["name"] == "memory" and use["input"]["action"] == "add" and use["input"]["file"] == "MEMORY.md"
    assert use["input"]["text"].startswith("[memory text withheld: sha256 ")
    export_file = tmp_path / "session.json"
    export_file.write_text(exported.stdout)
    assert cli("sessions", "import", "--as-new", str(export_file)).exit_code == 0
