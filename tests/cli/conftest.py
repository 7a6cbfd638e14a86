"""Fixtures for the CLI tests: a replay server on 127.0.0.1 and a workspace per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .replay_server import ReplayServer


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer().start()
    yield replay
    replay.stop()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "metis_home"
