"""Two gateway processes on one PostgreSQL database, driven at once by the official Anthropic SDK.

They share one key's budget: each call reserves its worst case first, but the recording reports 705
input tokens for a message estimated at a few, so they may overspend it by that shortfall for each call
in flight when it ran out (test_gateway_budget_reservations.py holds the tight bound); every answered
call is recorded exactly once (one session, one llm.call_completed,
one charge); every session's events are complete, in order, with their causal parents stored.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import anthropic
import httpx
import pytest
from cli.replay_server import ANTHROPIC, ReplayServer, Reply
from store_backends import _postgres_session, postgres_url  # noqa: F401

from metis_core.events.bus import EventBus
from metis_core.gateway.keys import KeyService, KeyTerms
from metis_core.store import SessionStore
from metis_core.store.gateway_keys import open_gateway_key_store
from metis_core.trace import TraceStore

from .gateway_harness import free_port

CLIENT_THREADS = 6
BUDGET = Decimal("0.005")
TURN_ORDER = ["turn.started", "llm.call_started", "llm.call_completed", "turn.completed"]


def _start_gateway(home: Path, url: str, upstream: ReplayServer) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL")}
    env.update(METIS_HOME=str(home), METIS_DATABASE_URL=url, METIS_ANTHROPIC_BASE_URL=upstream.base_url,
               ANTHROPIC_API_KEY="sk-ant-upstream-SECRET-0001", METIS_GATEWAY_WORKSPACE=str(home))
    process = subprocess.Popen(
        [sys.executable, "-c", "from metis_core.cli.app import main; main()", "gateway", "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"gateway exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            if httpx.get(base + "/readyz", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise AssertionError("the gateway did not become ready")


def test_two_gateways_share_one_budget_and_record_every_call_once(
    tmp_path: Path, postgres_url: str  # noqa: F811
) -> None:
    upstream = ReplayServer().start()
    upstream.script(ANTHROPIC, *[Reply.recording("anthropic", "response__text.json") for _ in range(80)])
    keys = open_gateway_key_store(postgres_url)
    with EventBus() as bus:
        issued = KeyService(keys, bus).issue(KeyTerms(name="shared", budget_usd=BUDGET, budget_period="total"))
    gateways = [_start_gateway(tmp_path / f"home{i}", postgres_url, upstream) for i in range(2)]
    answered: list[str] = []
    refused: list[int] = []
    lock = threading.Lock()

    def client(index: int) -> None:
        sdk = anthropic.Anthropic(base_url=gateways[index % 2][1], api_key=issued.token, max_retries=0)
        for _ in range(30):
            try:
                answer = sdk.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=100,
                                             messages=[{"role": "user", "content": f"weather? {index}"}])
            except anthropic.RateLimitError as error:
                with lock:
                    refused.append(error.status_code)
                return
            with lock:
                answered.append(answer.id)

    try:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENT_THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        calls = len(answered)
        workspace = f"gateway:{issued.record.id}"
        deadline = time.monotonic() + 30
        while True:  # the record is written off the answer's path: wait for it to land
            with SessionStore(postgres_url) as sessions:
                recorded = [s for s in sessions.list_sessions(limit=1000) if s.workspace_path.endswith(workspace)]
            with TraceStore(postgres_url) as trace:
                completed = [e for e in trace.events(types=["llm.call_completed"])
                             if e.payload.get("gateway_key_id") == issued.record.id]
            if (len(recorded) >= calls and len(completed) >= calls) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        for process, _ in gateways:
            process.terminate()
            process.wait(30)
        upstream.stop()

    assert refused == [429] * CLIENT_THREADS  # every client ran into the spent budget
    cost = Decimal(str(completed[0].payload["cost_usd"]))
    spent = keys.spent("gateway_key", issued.record.id, 0)
    keys.close()
    assert spent == cost * calls  # each answered call charged once
    # A call is admitted while its worst-case reservation fits what is left, so the answered calls
    # stop at the last whole call the budget holds, plus at most one per other call in flight whose
    # reservation (a few input tokens estimated) fell short of the 705 the recording reports.
    fits = math.floor(BUDGET / cost)
    assert fits <= calls <= fits + CLIENT_THREADS - 1
    assert spent - BUDGET < cost * CLIENT_THREADS  # overspend bounded by the calls in flight
    assert len(upstream.bodies(ANTHROPIC)) == calls  # a refused request never reached the provider
    assert len(recorded) == calls and len(completed) == calls  # recorded once, not twice
    assert len({e.session_id for e in completed}) == calls
    with TraceStore(postgres_url) as trace:
        for session in recorded:
            events = trace.replay(session.id)
            types = [e.type for e in events]
            assert [t for t in types if t in TURN_ORDER] == TURN_ORDER, types
            seen = set()
            for event in events:
                assert event.parent_event_id is None or event.parent_event_id in seen or trace.get(
                    event.parent_event_id) is not None
                seen.add(event.id)
        assert trace.detect_gaps() == []


@pytest.fixture(autouse=True)
def _needs_the_gateway_extra() -> None:
    pytest.importorskip("uvicorn", reason="the gateway extra is not installed: pip install -e '.[gateway]'")
