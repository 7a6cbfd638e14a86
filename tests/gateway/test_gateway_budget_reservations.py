"""Budgets that hold before the money is spent: two gateway instances on one store, many calls at once.

Each call reserves its worst case (input estimate x input rate + max_tokens x output rate) in the
store before it goes upstream, so the answered spend stays within the budget plus the estimate's
error, however many calls are in flight; a refusal is a 429 before any upstream traffic. Also:
a cut stream is charged for what it streamed, a failed call releases its reservation, and bad
input (max_tokens, an unpriced model) gets named errors.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from cli.replay_server import ANTHROPIC, ReplayServer, Reply, SeenRequest
from fixture_files import read_bytes
from postgres_server import shared_server
from store_backends import _postgres_session  # noqa: F401

from metis_core.store.gateway_keys import SqliteGatewayKeyStore, open_gateway_key_store
from metis_core.store.records import to_us

from .gateway_harness import GatewayHarness

HAIKU = "anthropic:claude-haiku-4-5"
INPUT_RATE, OUTPUT_RATE = Decimal("0.000001"), Decimal("0.000005")  # haiku 4.5: $1/M in, $5/M out
CACHE_WRITE_RATE = Decimal("0.00000125")  # the dearest input rate: what an input estimate is reserved at
UPSTREAM_INPUT, UPSTREAM_OUTPUT, MAX_TOKENS = 40, 60, 100
CALL_COST = UPSTREAM_INPUT * INPUT_RATE + UPSTREAM_OUTPUT * OUTPUT_RATE  # $0.00034 per answered call
BUDGET = Decimal("0.002")  # ~5.9 answered calls; a call's reservation is ~$0.00051
CALLS, AT_ONCE = 40, 12


def answer_body(n: int) -> bytes:
    return json.dumps({
        "model": "claude-haiku-4-5-20251001", "id": f"msg_{n:04d}", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": UPSTREAM_INPUT, "output_tokens": UPSTREAM_OUTPUT},
    }).encode()  # fmt: skip


class SlowUpstream(ReplayServer):
    """A replay upstream that takes 50 ms to answer, so the calls really are in flight together."""

    def next_reply(self, request: SeenRequest) -> Reply:
        time.sleep(0.05)
        return super().next_reply(request)


@pytest.fixture(params=["sqlite", "postgres"])
def shared_keys(request: pytest.FixtureRequest, tmp_path: Path, _postgres_session: None) -> str | Path:  # noqa: F811
    """Where both gateway instances keep keys and budgets: one SQLite file, or one PostgreSQL database
    (tests/postgres_server.py's throwaway server)."""
    if request.param == "sqlite":
        return tmp_path / "shared.db"
    return shared_server().fresh_database_url()


def two_gateways(tmp_path: Path, where: str | Path, upstream: ReplayServer) -> list[GatewayHarness]:
    return [GatewayHarness(tmp_path / f"home{i}", upstream, key_store=open_gateway_key_store(where)).start()
            for i in range(2)]


def call(base_url: str, token: str, n: int, **body: Any) -> httpx.Response:
    payload = {"model": HAIKU, "max_tokens": MAX_TOKENS, "messages": [{"role": "user", "content": f"call {n}"}]}
    payload.update(body)
    return httpx.post(base_url + "/v1/messages", json=payload, headers={"x-api-key": token}, timeout=30)


def test_forty_calls_twelve_at_a_time_through_two_gateways_stay_within_the_budget(
        tmp_path: Path, shared_keys: str | Path) -> None:
    upstream = SlowUpstream().start()
    upstream.script(ANTHROPIC, *[Reply(200, answer_body(n), "application/json") for n in range(CALLS)])
    gateways = two_gateways(tmp_path, shared_keys, upstream)
    try:
        key_id, token = gateways[0].issue(budget_usd=BUDGET, budget_period="total")
        with ThreadPoolExecutor(AT_ONCE) as pool:
            responses = list(pool.map(lambda n: call(gateways[n % 2].base_url, token, n), range(CALLS)))
        for gateway in gateways:
            gateway.drain()
        answered = [r for r in responses if r.status_code == 200]
        refused = [r for r in responses if r.status_code != 200]
        store = gateways[0].service.key_store
        spent = store.spent("gateway_key", key_id, 0)
        estimates = [e.payload["estimated_input_tokens"] for g in gateways for e in g.of_type("turn.started")]
    finally:
        for gateway in gateways:
            gateway.stop()
        upstream.stop()
    assert len(answered) + len(refused) == CALLS
    assert {r.status_code for r in refused} == {429}
    assert all(r.json()["error"]["type"] == "rate_limit_error" and "may cost up to" in r.json()["error"]["message"]
               for r in refused)
    assert len(upstream.requests) == len(answered)  # a refused call never reached the provider
    assert spent == CALL_COST * len(answered)  # each answered call charged once, at its real cost
    # The bound: a reservation covers a call's real cost except where its input estimate fell short, so
    # spend <= budget + calls in flight x (real input cost - reserved input cost). Here the estimate is
    # ~6 tokens against 40 real ones: the bound is the budget plus 12 x ~$0.00003, far below one call's cost.
    shortfall = max(UPSTREAM_INPUT * INPUT_RATE - n * CACHE_WRITE_RATE for n in estimates)
    assert spent <= BUDGET + AT_ONCE * max(shortfall, Decimal(0))
    assert len(answered) >= 3  # the budget was used, not refused away: 3 worst cases fit at once
    assert len(refused) >= CALLS - 6


def test_nothing_stays_reserved_after_calls_answered_failed_and_refused(tmp_path: Path,
                                                                        upstream: ReplayServer) -> None:
    store = SqliteGatewayKeyStore(tmp_path / "keys.db")
    gateway = GatewayHarness(tmp_path / "home", upstream, key_store=store).start()
    try:
        key_id, token = gateway.issue(budget_usd=Decimal("0.001"), budget_period="day")
        overloaded = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}).encode()
        upstream.script(ANTHROPIC, Reply(200, answer_body(1), "application/json"),
                        Reply(529, overloaded, "application/json"))
        assert call(gateway.base_url, token, 1).status_code == 200
        assert call(gateway.base_url, token, 2).status_code == 529  # failed upstream: released, not charged
        gateway.drain()
        day = int(datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0).timestamp())
        assert store.spent("gateway_key", key_id, day) == CALL_COST
        assert store.reserved("gateway_key", key_id, day, to_us(datetime.now(UTC))) == 0
        refused = call(gateway.base_url, token, 3, max_tokens=4000)  # $0.02 worst case: does not fit
        assert refused.status_code == 429 and "4000 output tokens" in refused.json()["error"]["message"]
        assert int(refused.headers["retry-after"]) >= 1
        assert len(upstream.requests) == 2
        assert store.reserved("gateway_key", key_id, day, to_us(datetime.now(UTC))) == 0
    finally:
        gateway.stop()


@pytest.mark.parametrize("how", ["client_left", "upstream_broke"])
def test_a_cut_stream_is_charged_for_what_it_streamed(tmp_path: Path, upstream: ReplayServer, how: str) -> None:
    gateway = GatewayHarness(tmp_path / "home", upstream).start()
    sse = read_bytes("anthropic", "stream__text_basic.sse")
    cut_at = b"event: content_block_stop"
    if how == "client_left":  # the upstream stalls after "Hello there!"; the client leaves once it has it all
        upstream.script(ANTHROPIC, Reply(200, sse, stall_before=cut_at))
    else:  # the upstream connection ends after "Hello there!", without the message's end
        upstream.script(ANTHROPIC, Reply(200, sse[: sse.index(cut_at)]))
    try:
        key_id, token = gateway.issue(budget_usd=Decimal("1"), budget_period="day")
        body = {"model": HAIKU, "max_tokens": MAX_TOKENS, "stream": True,
                "messages": [{"role": "user", "content": "say hello"}]}
        with httpx.stream("POST", gateway.base_url + "/v1/messages", json=body, headers={"x-api-key": token},
                          timeout=30) as response:
            seen = ""
            for chunk in response.iter_text():
                seen += chunk
                if how == "client_left" and "!" in seen:
                    break
        assert "Hello" in seen
        deadline = time.monotonic() + 10
        while gateway.spent_today(key_id) == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        [started] = gateway.of_type("turn.started")
        estimate = started.payload["estimated_input_tokens"]
        streamed = 3  # "Hello there!": 12 characters, ~4 a token
        charged = estimate * CACHE_WRITE_RATE + streamed * OUTPUT_RATE
        assert gateway.spent_today(key_id) == charged
        day = int(datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0).timestamp())
        assert gateway.service.key_store.reserved("gateway_key", key_id, day, to_us(datetime.now(UTC))) == 0
        if how == "client_left":  # the record prices the cut call as the counter charged it
            traced = cut_call_on_the_record(gateway, started.session_id)
            assert traced == charged
    finally:
        gateway.stop()


def cut_call_on_the_record(gateway: GatewayHarness, session_id: str) -> Decimal:
    """The cut call's cost, checked to be the same in the trace, the stored answer and the session row."""
    deadline = time.monotonic() + 10
    while not gateway.of_type("turn.cancelled") and time.monotonic() < deadline:
        time.sleep(0.02)
    [call] = gateway.of_type("llm.call_completed")
    assert gateway.of_type("llm.call_failed") == [] and call.payload["pricing_version"] == "estimated"
    [answer] = [m for m in gateway.runtime.store.load_messages(session_id) if m.role.value == "assistant"]
    usage = answer.metadata.usage
    assert answer.status.value == "cancelled" and answer.text().startswith("Hello") and usage is not None
    assert usage.cost_usd is not None and Decimal(str(call.payload["cost_usd"])) == usage.cost_usd
    session = gateway.runtime.store.get_session(session_id)
    assert session is not None and session.total_cost_usd == usage.cost_usd
    return usage.cost_usd


def test_bad_max_tokens_and_an_unpriced_model_get_named_errors_before_upstream(
        tmp_path: Path, upstream: ReplayServer) -> None:
    gateway = GatewayHarness(tmp_path / "home", upstream).start()
    try:
        _, token = gateway.issue(budget_usd=Decimal("1"), budget_period="day")
        for bad in (0, -5, "lots"):
            answer = call(gateway.base_url, token, 1, max_tokens=bad)
            assert answer.status_code == 400, answer.text
        assert "max_tokens" in call(gateway.base_url, token, 1, max_tokens=0).json()["error"]["message"]
        chat = httpx.post(gateway.base_url + "/v1/chat/completions", headers={"authorization": f"Bearer {token}"},
                          json={"model": HAIKU, "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
        # no max_tokens: the model's max output (64,000 tokens, $0.32) is reserved, and it fits $1
        assert chat.status_code != 429
        _, small = gateway.issue(budget_usd=Decimal("0.1"), budget_period="day")
        chat = httpx.post(gateway.base_url + "/v1/chat/completions", headers={"authorization": f"Bearer {small}"},
                          json={"model": HAIKU, "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
        assert chat.status_code == 429 and "max_tokens" in chat.json()["error"]["message"]
        assert len(upstream.requests) <= 1  # only the call that fitted went upstream
    finally:
        gateway.stop()


def test_an_unpriced_model_is_refused_for_a_budgeted_key_unless_a_reservation_is_configured(
        tmp_path: Path, upstream: ReplayServer) -> None:
    from metis_core.gateway.service import GatewaySettings

    gateway = GatewayHarness(tmp_path / "home", upstream).start()
    gateway.service.rt.client._prices = None  # nothing has a price
    try:
        _, budgeted = gateway.issue(budget_usd=Decimal("1"), budget_period="day")
        refused = call(gateway.base_url, budgeted, 1)
        assert refused.status_code == 403 and "has no price" in refused.json()["error"]["message"]
        assert "METIS_GATEWAY_UNPRICED_RESERVE_USD" in refused.json()["error"]["message"]
        _, unlimited = gateway.issue()
        upstream.script(ANTHROPIC, Reply(200, answer_body(1), "application/json"))
        assert call(gateway.base_url, unlimited, 2).status_code == 200  # no budget: nothing to hold
        gateway.service.settings = GatewaySettings(workspace=tmp_path, unpriced_reserve_usd=Decimal("0.4"))
        key_id, capped = gateway.issue(budget_usd=Decimal("1"), budget_period="day")
        upstream.script(ANTHROPIC, *[Reply(200, answer_body(n), "application/json") for n in range(3)])
        assert call(gateway.base_url, capped, 3).status_code == 200
        assert call(gateway.base_url, capped, 4).status_code == 200
        assert call(gateway.base_url, capped, 5).status_code == 429  # $0.80 charged: $0.40 more does not fit
        assert gateway.spent_today(key_id) == Decimal("0.8")  # an unpriced call is charged what it reserved
    finally:
        gateway.stop()


def test_a_continuation_that_does_not_fit_the_budget_ends_the_answer_cut_short(
        tmp_path: Path, upstream: ReplayServer) -> None:
    from .test_gateway_pause_turn import CONTINUED, MODEL, PAUSED, PROMPT, as_json

    sonnet_input, sonnet_output = Decimal("0.00000375"), Decimal("0.000015")  # cache write, output: per token
    gateway = GatewayHarness(tmp_path / "home", upstream).start()
    body = {"model": MODEL, "max_tokens": 1000, "messages": [{"role": "user", "content": PROMPT}]}
    try:
        _, probe = gateway.issue()  # no budget: learn the paused call's price and the request's estimate
        upstream.script(ANTHROPIC, as_json(PAUSED), as_json(CONTINUED))
        assert httpx.post(gateway.base_url + "/v1/messages", json=body, headers={"x-api-key": probe},
                          timeout=30).status_code == 200
        paused_cost = Decimal(str(gateway.of_type("llm.call_completed")[0].payload["cost_usd"]))
        estimate = gateway.of_type("turn.started")[0].payload["estimated_input_tokens"]
        first = estimate * sonnet_input + 1000 * sonnet_output
        # the first call fits; once it is charged, the continuation's own worst case (a longer input) does not
        key_id, token = gateway.issue(budget_usd=first + paused_cost / 2, budget_period="day")
        upstream.script(ANTHROPIC, as_json(PAUSED), as_json(CONTINUED))
        answer = httpx.post(gateway.base_url + "/v1/messages", json=body, headers={"x-api-key": token}, timeout=30)
        assert answer.status_code == 200 and answer.json()["stop_reason"] == "pause_turn"
        assert len(upstream.requests) == 3  # the probe's two calls, then only the paused one
        turn = gateway.of_type("turn.completed")[-1]
        assert "cut short" in turn.payload["signals_extra"]["error"] and "budget" in turn.payload["signals_extra"][
            "error"]
        assert gateway.spent_today(key_id) == paused_cost
        day = int(datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0).timestamp())
        assert gateway.service.key_store.reserved("gateway_key", key_id, day, to_us(datetime.now(UTC))) == 0
    finally:
        gateway.stop()
