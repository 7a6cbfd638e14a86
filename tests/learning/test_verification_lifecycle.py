"""Verification replays in a running process: closing never waits long and leaves nothing half
learned, a replay that fails or raises is counted and learns nothing (its message without secrets),
the thread survives it, the budget starts anew each day, and a caller's pooled async client turns
verification off with the reason."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from support_servers import Reply

from metis_core.learning.verification import Verifier
from metis_core.replay import session_replay
from metis_core.store.backend import DATABASE_URL_ENV

from .conftest import CHEAP, STRONG, LearningHarness
from .test_evaluator import judge_reply
from .test_pattern_routing import SUMMARY, learning_harness
from .test_verification import SETTINGS, held_by_cheap, learned, verdict

KEY = "sk-ant-api03-" + "x" * 40


@pytest.fixture(autouse=True)
def learning_backend(monkeypatch: pytest.MonkeyPatch) -> str:
    """SQLite only: verification reads and writes through the stores the other tests run on both backends."""
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    return "sqlite"


async def cheap_fails_unsettled(h: LearningHarness, *then: Reply) -> None:
    """The cheap model gets a summary wrong (rated down): the verifier starts a replay, answered by
    `then` (scripted before: the replay may start at once); not waited for."""
    h.answers(1)
    h.script.script("anthropic", then)
    s = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(s, SUMMARY, override=CHEAP)
    h.loop.feedback.rate(s.id, "down")
    h.runtime.sessions.end(s)


def replay_outcomes(h: LearningHarness, kind: str) -> list[str]:
    replays = {s.id for s in h.runtime.store.list_sessions() if s.replay_of}
    return [o.source for o in h.loop.patterns.outcomes([kind]) if o.session_id in replays]


async def test_closing_cancels_a_replay_under_way_after_its_grace_and_learns_nothing(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", **SETTINGS)
    try:
        kind = await held_by_cheap(h)
        asked = threading.Event()

        async def answers_then_never(request: httpx.Request) -> httpx.Response:
            if not asked.is_set() and request.url.host in h.script.queues and h.script.queues[request.url.host]:
                return h.script.handler(request)  # the cheap model's own turn
            asked.set()
            await asyncio.Event().wait()  # the replay: a model that never answers, only a cancel ends the call
            raise AssertionError("unreachable")

        transport = h.runtime.client._transport  # type: ignore[attr-defined]
        transport._async_client = httpx.AsyncClient(transport=httpx.MockTransport(answers_then_never))
        await cheap_fails_unsettled(h)
        h.runtime.bus.settle()
        assert asked.wait(5), "the verifier started a replay"
        assert h.loop.verifier.close in h.runtime.on_closing, "the runtime stops it before its bus closes"
        h.loop.verifier.close_grace_seconds = 0.05
        began = time.monotonic()
        h.loop.verifier.close()
        assert time.monotonic() - began < 3.0

        h.runtime.bus.settle()
        (replay,) = [s for s in h.runtime.store.list_sessions() if s.replay_of]
        assert replay.disposition == "error"
        assert h.loop.verifier.failed == 1 and h.loop.verifier.replayed == 0
        assert learned(h, kind) == [] and replay_outcomes(h, kind) == []
        assert h.loop.verifier.consider(CHEAP, "after-close") is None, "a closed verifier starts nothing"
    finally:
        h.runtime.close()


async def test_a_replay_whose_turn_fails_on_the_provider_is_counted_and_learns_nothing(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", **SETTINGS)
    try:
        kind = await held_by_cheap(h)
        requests = len(h.script.requests)
        await cheap_fails_unsettled(h, Reply.json({"type": "error", "error": {"type": "api_error",
                                                                                "message": "overloaded"}}, 500))
        h.loop.settle()
        assert h.loop.verifier.failed == 1
        assert learned(h, kind) == [] and replay_outcomes(h, kind) == [], "an outage is no evidence of quality"
        assert len(h.script.requests) == requests + 2, "the turn and the replay asked; the judge was not asked"
    finally:
        h.runtime.close()


async def test_a_replay_that_raises_after_its_turn_is_logged_without_secrets_learns_nothing_and_the_next_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", **SETTINGS)
    try:
        kind = await held_by_cheap(h)
        real = session_replay._replay_turn
        raised: list[bool] = []

        async def raises_once_after_the_turn(*args: Any, **kwargs: Any) -> Any:
            comparison = await real(*args, **kwargs)
            if not raised:
                raised.append(True)
                raise RuntimeError(f"upstream refused key {KEY}")
            return comparison

        monkeypatch.setattr(session_replay, "_replay_turn", raises_once_after_the_turn)
        with caplog.at_level(logging.WARNING, logger="metis_core.learning"):
            await cheap_fails_unsettled(h, Reply.fixture("anthropic", "stream__text_basic.sse"))
            h.loop.settle()
        assert h.loop.verifier.failed == 1 and h.loop.verifier.replayed == 0
        assert "[redacted key]" in caplog.text and KEY not in caplog.text
        assert replay_outcomes(h, kind) == [], "the replay's session was the verifier's: nothing recorded"

        h.answers(1)
        h.script.script("anthropic", [judge_reply(verdict(0.95))])
        assert h.loop.verifier.consider(CHEAP, "an-observed-session") is not None
        h.loop.settle()
        assert h.loop.verifier.replayed == 1 and learned(h, kind) == [0.95], "the verifier's thread survived"
    finally:
        h.runtime.close()


def test_the_daily_budget_starts_anew_on_a_new_day_for_the_judge_too(tmp_path: Path) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", **SETTINGS)
    try:
        v = h.loop.verifier
        v._day -= timedelta(days=1)
        v._spent_today = v.settings.usd_per_day  # yesterday's budget spent
        assert v._judge_cap() == v.settings.usd_per_day  # nothing judged today: today's whole budget
        assert v._affordable(v.settings.usd_per_day) and v._spent_today == Decimal(0)
    finally:
        h.runtime.close()


def test_a_callers_pooled_async_client_turns_verification_off_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    h = learning_harness(tmp_path, f"default: {STRONG}\n", **SETTINGS)
    pooled = httpx.AsyncClient()
    try:
        h.runtime.client._transport._async_client = pooled  # type: ignore[attr-defined]
        with caplog.at_level(logging.WARNING, logger="metis_core.learning"):
            off = Verifier(h.loop)
        assert not off.enabled and off.unavailable is not None and "async_http_client" in off.unavailable
        assert "verification by replay is off" in caplog.text
    finally:
        h.runtime.close()
        asyncio.run(pooled.aclose())
