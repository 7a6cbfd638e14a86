"""Long-running servers end idle sessions on a timer (bus spec §6.1): the runtime's sweep, its
failures survived, and `metis gateway serve` ending another process's idle session by itself."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from gateway.gateway_harness import free_port

from metis_core.agent.idle_sweep import IdleSweep
from metis_core.errors import StoreError
from metis_core.events.envelope import Actor
from metis_core.store import SessionStore

from .conftest import Harness


def wait_until(condition: object, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.05)


def test_a_server_runtime_ends_idle_sessions_on_a_timer_until_it_closes(harness: Harness) -> None:
    h = harness
    idle = h.runtime.sessions.create(h.workspace)
    h.runtime.config.sessions.inactivity_timeout_hours = 0.3 / 3600  # idle after 0.3 s
    sweep = h.runtime.sweep_idle_sessions(0.05)
    assert sweep is not None and h.runtime.sweep_idle_sessions(0.05) is sweep  # one timer per runtime
    wait_until(lambda: sweep.swept == 1)  # counted once its sweep returned

    assert h.runtime.store.get_session(idle.id).disposition == "abandoned" and sweep.swept == 1
    (ended,) = [e for e in h.events(idle.id) if e.type == "session.ended"]
    assert ended.actor is Actor.SYSTEM and ended.payload["disposition"] == "abandoned"
    h.runtime.close()
    assert not any(t.name == "metis-idle-sweep" for t in threading.enumerate())


def test_no_timer_when_the_interval_is_zero(harness: Harness) -> None:
    harness.runtime.config.sessions.sweep_interval_minutes = 0
    assert harness.runtime.sweep_idle_sessions() is None


def test_a_failed_sweep_is_logged_and_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    outcomes: list[list[str] | Exception] = [StoreError("database is locked"), ["sess_a"], []]

    def sweep() -> list[str]:
        outcome = outcomes.pop(0) if outcomes else []
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    timer = IdleSweep(sweep, 0.01).start()
    wait_until(lambda: not outcomes)
    timer.stop()
    assert timer.swept == 1
    assert "idle-session sweep failed, trying again" in caplog.text and "database is locked" in caplog.text
    with pytest.raises(ValueError, match="interval_seconds must be positive"):
        IdleSweep(sweep, 0)


def test_the_gateway_ends_an_idle_session_of_another_process_by_itself(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "sessions:\n  inactivity_timeout_hours: 0.0003\n  sweep_interval_minutes: 0.005\n")  # ~1 s, every 0.3 s
    with SessionStore(home / "metis.db") as store:
        idle = store.create_session(tmp_path)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(METIS_HOME=str(home), METIS_GATEWAY_WORKSPACE=str(tmp_path))
    env.pop("METIS_DATABASE_URL", None)
    gateway = subprocess.Popen(
        [sys.executable, "-c", "from metis_core.cli.app import main; main()", "gateway", "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: _ready(port) or gateway.poll() is not None, 60)
        assert gateway.poll() is None, gateway.stderr.read().decode() if gateway.stderr else ""
        with SessionStore(home / "metis.db") as store:
            wait_until(lambda: store.get_session(idle.id).ended_at is not None)
            assert store.get_session(idle.id).disposition == "abandoned"
    finally:
        gateway.terminate()
        gateway.wait(30)


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
