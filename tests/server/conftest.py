"""Fixtures: a scripted Runtime and a live `metis serve` on 127.0.0.1 over it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support_servers import ScriptedTransport

from metis_core.agent.runtime import Runtime

from .server_support import LiveServer, WeatherTool, scripted_runtime


@dataclass
class Served:
    runtime: Runtime
    server: LiveServer
    script: ScriptedTransport
    weather: WeatherTool
    workspace: Path


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    (home / "routing.yaml").write_text("default: anthropic:claude-haiku-4-5\n")
    script, weather = ScriptedTransport(), WeatherTool()
    runtime = scripted_runtime(home, script, weather)
    server = LiveServer(runtime, workspace, client_queue=50)
    yield Served(runtime, server, script, weather, workspace)
    server.stop()
    runtime.close()
