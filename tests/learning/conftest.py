"""A Runtime over scripted Anthropic traffic with the learning loop attached, on each backend.

Every test here runs twice: on the SQLite file in METIS_HOME and, with METIS_DATABASE_URL set,
on a fresh database of the throwaway PostgreSQL server (tests/postgres_server.py), where the
runtime's stores and the learning tables then live together.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import shared_server
from store_backends import BACKENDS, _postgres_session  # noqa: F401
from support_servers import API_KEYS, Reply, ScriptedTransport

from metis_core.agent.runtime import Runtime
from metis_core.events.bus import EventBus
from metis_core.events.envelope import Event
from metis_core.learning.loop import LearningLoop
from metis_core.learning.settings import LearningSettings
from metis_core.store.backend import DATABASE_URL_ENV

STRONG = "anthropic:claude-sonnet-4-6"
CHEAP = "anthropic:claude-haiku-4-5"


@pytest.fixture(params=BACKENDS, autouse=True)
def learning_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                     _postgres_session: None) -> str:  # noqa: F811
    """"sqlite", or "postgres" with METIS_DATABASE_URL naming a fresh database for this test."""
    if request.param == "postgres":
        monkeypatch.setenv(DATABASE_URL_ENV, shared_server().fresh_database_url())
    else:
        monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    return str(request.param)


class LearningHarness:
    def __init__(self, home: Path, workspace: Path, settings: LearningSettings | None = None) -> None:
        self.home = home
        self.workspace = workspace
        self.script = ScriptedTransport()
        self.runtime = Runtime(home=home, client=self.script.model_client(), bus=EventBus(mode="strict"),
                               configured_providers=set(API_KEYS))
        self.loop = LearningLoop.attach(self.runtime, settings)

    def answers(self, count: int) -> None:
        self.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse") for _ in range(count)])

    def events(self, session_id: str | None = None) -> list[Event]:
        # Twice: the first waits for the batch subscribers, the second for the events they emitted.
        self.runtime.bus.flush()
        self.runtime.bus.flush()
        self.runtime.trace.flush()
        if session_id is None:
            return self.runtime.trace.events()
        return self.runtime.trace.replay(session_id)

    def of_type(self, event_type: str, session_id: str | None = None) -> list[Event]:
        return [e for e in self.events(session_id) if e.type == event_type]


@pytest.fixture
def learning(tmp_path: Path) -> Iterator[LearningHarness]:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "routing.yaml").write_text(f"default: {STRONG}\n")
    h = LearningHarness(home, workspace)
    yield h
    h.runtime.close()
