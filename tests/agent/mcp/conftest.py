"""Runtimes connected to the real probe MCP server, over stdio and over streamable HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support_servers import API_KEYS, ScriptedTransport

from metis_core.agent.confirmation import ConfirmationPolicy
from metis_core.agent.dispatch import DispatchResult, ToolDispatcher
from metis_core.agent.recording import TurnRecorder
from metis_core.agent.runtime import Runtime
from metis_core.agent.session import Session
from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event
from metis_core.ids import new_ulid
from metis_core.messages import ToolUseBlock

from ..conftest import ScriptedConfirmer

PROBE = Path(__file__).with_name("probe_server.py")


def stdio_server(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(PROBE)], **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_probe() -> Iterator[str]:
    """The probe server over streamable HTTP on 127.0.0.1; yields its /mcp URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(PROBE), str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None:
                raise RuntimeError("the probe server exited before listening") from None
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(10)


class McpHarness:
    def __init__(self, home: Path, workspace: Path, servers: dict[str, Any]) -> None:
        home.mkdir(exist_ok=True)
        workspace.mkdir(exist_ok=True)
        (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": servers}))
        (home / "routing.yaml").write_text("default: anthropic:claude-haiku-4-5\n")
        self.workspace = workspace
        self.script = ScriptedTransport()
        self.confirmer = ScriptedConfirmer()
        self.runtime = Runtime(home=home, client=self.script.model_client(), bus=EventBus(mode="strict"),
                               confirmer=self.confirmer, configured_providers=set(API_KEYS))
        self.session = self.runtime.sessions.create(workspace)

    async def call(self, name: str, tool_input: dict[str, Any], *, approve: bool = True) -> DispatchResult:
        """One tool call through the real dispatcher (validation, confirmation, events)."""
        session: Session = self.session
        policy = ConfirmationPolicy(confirmer=self.confirmer, approve_everything=approve)
        dispatcher = ToolDispatcher(self.runtime.tools, policy, session.tool_context())
        recorder = TurnRecorder(self.runtime.bus, session.id, new_ulid())
        return await dispatcher.run_one(ToolUseBlock(id="toolu_" + new_ulid(), name=name, input=tool_input),
                                        recorder, None)

    def events(self) -> list[Event]:
        self.runtime.bus.flush()
        self.runtime.trace.flush()
        return self.runtime.trace.replay(self.session.id)

    def close(self) -> None:
        self.runtime.close()


@pytest.fixture
def make_harness(tmp_path: Path) -> Iterator[Any]:
    made: list[McpHarness] = []

    def make(servers: dict[str, Any]) -> McpHarness:
        harness = McpHarness(tmp_path / f"home{len(made)}", tmp_path / "workspace", servers)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.close()
