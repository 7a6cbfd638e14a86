"""Fixtures: a replay upstream and a running gateway in front of it, with one issued key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli.replay_server import ReplayServer

from .gateway_harness import GatewayHarness


@pytest.fixture
def upstream() -> Iterator[ReplayServer]:
    replay = ReplayServer().start()
    yield replay
    replay.stop()


@pytest.fixture
def gateway(tmp_path: Path, upstream: ReplayServer) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path / "home", upstream).start()
    yield harness
    harness.stop()
