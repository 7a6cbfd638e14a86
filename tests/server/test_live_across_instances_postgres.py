"""Two `metis gateway serve` processes and a `metis serve` in a third, on one PostgreSQL database: a
WebSocket client of `metis serve` sees both gateways' calls live, in commit order, none lost or twice
— across a killed listening connection, and when it reconnects with the last id it saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import psycopg
import pytest
from cli.replay_server import ANTHROPIC, ReplayServer, Reply
from gateway.gateway_harness import free_port
from store_backends import _postgres_session, postgres_url  # noqa: F401
from websockets.sync.client import ClientConnection, connect

from metis_core.events.bus import EventBus
from metis_core.gateway.keys import KeyService, KeyTerms
from metis_core.store.gateway_keys import open_gateway_key_store
from metis_core.store.postgres.event_positions import APPLICATION_NAME

METIS = [sys.executable, "-c", "from metis_core.cli.app import main; main()"]
CALLS_PER_ROUND = 2  # per gateway
TURN_ORDER = ["turn.started", "llm.call_started", "llm.call_completed", "turn.completed"]
LIVE_WITHIN = 5.0
"""Seconds a call's completion may take to reach the client (bench/live_feed.py measures the real figure)."""


METRICS_BEARER = "live-feed-metrics-bearer-0123"


def _launch(home: Path, url: str, upstream: ReplayServer, *command: str) -> tuple[subprocess.Popen[bytes], str]:
    home.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    env.update(METIS_HOME=str(home), METIS_DATABASE_URL=url, METIS_ANTHROPIC_BASE_URL=upstream.base_url,
               ANTHROPIC_API_KEY="sk-ant-upstream-SECRET-0001", METIS_GATEWAY_WORKSPACE=str(home),
               METIS_OLLAMA_PROBE_URL="http://127.0.0.1:9", METIS_METRICS_BEARER=METRICS_BEARER)
    process = subprocess.Popen([*METIS, *command, "--port", str(port)], env=env, cwd=home,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return process, f"http://127.0.0.1:{port}"


def _wait_ready(process: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{url} did not become ready"
        time.sleep(0.1)


class Watcher:
    """A WebSocket client reading in a thread: every event frame, with when it arrived."""

    def __init__(self, url: str, subscription: dict[str, Any]) -> None:
        self.ws: ClientConnection = connect(url, open_timeout=10).__enter__()
        self.ws.send(json.dumps(subscription))
        self.frames: list[tuple[float, dict[str, Any]]] = []
        self.changed = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for text in self.ws:
            with self.changed:
                self.frames.append((time.monotonic(), json.loads(text)))
                self.changed.notify_all()

    def events(self) -> list[dict[str, Any]]:
        return [frame["event"] for _, frame in self.frames if frame["kind"] == "event"]

    def wait_for_turns(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: sum(
                e["type"] == "turn.completed" for e in self.events()) >= count, 30), self.events()

    def arrival(self, event_id: str) -> float:
        return next(at for at, frame in self.frames if frame.get("event", {}).get("id") == event_id)


def test_a_serve_client_sees_both_gateways_calls_live_in_order_across_reconnects(
    tmp_path: Path, postgres_url: str  # noqa: F811
) -> None:
    upstream = ReplayServer().start()
    upstream.script(ANTHROPIC, *[Reply.recording("anthropic", "response__text.json") for _ in range(12)])
    keys = open_gateway_key_store(postgres_url)  # migrates the fresh database before three processes open it
    with EventBus() as bus:
        caller = KeyService(keys, bus).issue(KeyTerms(name="caller")).token
        viewer = KeyService(keys, bus).issue(KeyTerms(name="console", scope="admin")).token
    keys.close()
    gateways = [_launch(tmp_path / f"gw{i}", postgres_url, upstream, "gateway", "serve") for i in range(2)]
    serve = _launch(tmp_path / "serve", postgres_url, upstream, "serve", "--require-key", "--metrics")
    processes = [p for p, _ in (*gateways, serve)]
    watchers: list[Watcher] = []
    try:
        for process, base in gateways:
            _wait_ready(process, base + "/readyz")
        _wait_ready(*serve)
        ws_url = serve[1].replace("http", "ws") + f"/ws/events?token={viewer}"
        watcher = Watcher(ws_url, {"domains": ["turn", "llm"]})
        watchers.append(watcher)
        sdks = [anthropic.Anthropic(base_url=base, api_key=caller, max_retries=0) for _, base in gateways]
        answered: dict[str, float] = {}

        def call_round(tag: str) -> None:
            for n in range(CALLS_PER_ROUND):
                for index, sdk in enumerate(sdks):
                    sdk.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=50,
                                        messages=[{"role": "user", "content": f"{tag} {index} {n}"}])
                    answered[f"{tag} {index} {n}"] = time.monotonic()

        call_round("before")
        watcher.wait_for_turns(2 * CALLS_PER_ROUND)
        with psycopg.connect(postgres_url, autocommit=True) as admin:  # the listener's connection dies
            killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE application_name = %s", (APPLICATION_NAME,)).fetchall()
        assert killed == [(True,)]
        call_round("after")
        watcher.wait_for_turns(4 * CALLS_PER_ROUND)
        seen = watcher.events()
        resumed = Watcher(ws_url, {"domains": ["turn", "llm"], "last_event_id": seen[4]["id"]})
        watchers.append(resumed)
        with resumed.changed:
            assert resumed.changed.wait_for(lambda: any(f["kind"] == "replay_done" for _, f in resumed.frames), 30)
        scraped = httpx.get(serve[1] + "/metrics", headers={"authorization": f"Bearer {METRICS_BEARER}"}).text
    finally:
        for client in watchers:
            client.ws.close()
        for process in processes:
            process.terminate()
            process.wait(30)
        upstream.stop()

    ids = [e["id"] for e in seen]
    assert len(ids) == len(set(ids))  # none twice
    with psycopg.connect(postgres_url) as conn:
        stored = [row[0] for row in conn.execute(
            "SELECT id FROM events WHERE split_part(type, '.', 1) IN ('turn', 'llm') AND (txid, seq) >= "
            "(SELECT txid, seq FROM events WHERE id = %s) AND (txid, seq) <= (SELECT txid, seq FROM events "
            "WHERE id = %s) ORDER BY txid, seq", (ids[0], ids[-1]))]
    assert ids == stored  # every stored event after the first one seen, in commit order: none lost
    sessions: dict[str, list[str]] = {}
    for event in seen:
        sessions.setdefault(event["session_id"], []).append(event["type"])
    assert len(sessions) == 4 * CALLS_PER_ROUND and all(
        [t for t in types if t in TURN_ORDER] == TURN_ORDER for types in sessions.values())
    with psycopg.connect(postgres_url) as conn:  # the prompt names the gateway each call went through
        prompts = sorted(row[0] for row in conn.execute(
            "SELECT b->>'text' FROM messages m, jsonb_array_elements(m.content_json) b "
            "WHERE m.role = 'user' AND m.session_id = ANY(%s)", (list(sessions),)))
    assert prompts == sorted(answered)  # both instances' calls, every one of them
    replayed = [f["event"]["id"] for _, f in resumed.frames if f["kind"] == "event" and f.get("replayed")]
    assert replayed == ids[5:]  # the reconnecting client gets exactly what it missed
    assert "metis_live_feed_reconnects 1.0" in scraped and "metis_live_feed_clients 2.0" in scraped
    completions = [e for e in seen if e["type"] == "llm.call_completed"]
    assert max(watcher.arrival(e["id"]) for e in completions) - max(answered.values()) < LIVE_WITHIN


@pytest.fixture(autouse=True)
def _needs_the_gateway_extra() -> None:
    pytest.importorskip("uvicorn", reason="the gateway extra is not installed: pip install -e '.[gateway]'")
