"""Every gateway call is a session turn on the record: events with the key, shape, user and team,
the messages in the store, and `metis cost --by key|user|team` over them."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import anthropic
import openai
import pytest
from cli.replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply
from typer.testing import CliRunner

from metis_core.cli.app import app
from metis_core.gateway.keys import new_subject_id

from .gateway_harness import GatewayHarness


def test_a_call_is_a_recorded_turn_with_the_gateway_identity(gateway: GatewayHarness) -> None:
    user, team = new_subject_id("user"), new_subject_id("team")
    key_id, token = gateway.issue(user_id=user, team_id=team)
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__text.json"))
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    client.chat.completions.create(model="openai:gpt-4o", messages=[{"role": "user", "content": "hi"}])
    [completed] = gateway.of_type("llm.call_completed")
    assert {k: completed.payload[k] for k in ("gateway_key_id", "inbound_shape", "user_id", "team_id")} == {
        "gateway_key_id": key_id, "inbound_shape": "openai", "user_id": user, "team_id": team}
    session = completed.session_id
    turn_types = [e.type for e in gateway.events.events if e.session_id == session]
    assert turn_types == ["turn.started", "llm.call_started", "llm.call_completed", "turn.completed"]
    [turn_done] = gateway.of_type("turn.completed")
    assert turn_done.payload["user_id"] == user
    stored = gateway.runtime.store.load_messages(session)
    assert [m.role.value for m in stored] == ["user", "assistant"]
    assert (stored[1].metadata.model_extra or {})["gateway_key_id"] == key_id
    assert stored[1].metadata.user_id == user
    persisted = gateway.runtime.trace.replay(session)
    assert [e.type for e in persisted] == turn_types


def test_cost_by_key_user_and_team_counts_only_calls_the_gateway_made(
    gateway: GatewayHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = new_subject_id("user")
    first_key, first = gateway.issue(user_id=user)
    second_key, second = gateway.issue()
    gateway.upstream.script(ANTHROPIC, *[Reply.recording("anthropic", "response__text.json")] * 3)
    for token in (first, first, second):
        client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
        client.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=20, messages=[
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "weather?"}])  # fmt: skip
    gateway.drain()
    monkeypatch.setenv("METIS_HOME", str(gateway.runtime.home))
    result = CliRunner().invoke(app, ["cost", "--by", "key", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["key"]: row for row in json.loads(result.output)["key"]}
    one_call = Decimal("0.00083")
    assert rows[first_key]["calls"] == 2 and Decimal(rows[first_key]["cost_usd"]) == one_call * 2
    assert rows[second_key]["calls"] == 1  # the "hello" each client sent as history is not a call
    by_user = {row["key"]: row for row in json.loads(CliRunner().invoke(app, ["cost", "--by", "user", "--json"])
                                                      .output)["user"]}
    assert by_user[user]["calls"] == 2 and by_user["-"]["calls"] == 1
    assert CliRunner().invoke(app, ["cost", "--by", "nonsense"]).exit_code != 0


def test_a_fallback_chain_answers_from_the_next_member_and_records_both_attempts(gateway: GatewayHarness) -> None:
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "error__529_overloaded_error.json", 529))
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__text.json"))
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    answer = client.messages.create(model="anthropic:claude-haiku-4-5,openai:gpt-4o", max_tokens=20,
                                    messages=[{"role": "user", "content": "hi"}])
    assert answer.content[0].text.startswith("I'm unable")  # type: ignore[union-attr]
    [failed] = gateway.of_type("llm.call_failed")
    [completed] = gateway.of_type("llm.call_completed")
    assert failed.payload["model"] == "anthropic:claude-haiku-4-5" and failed.payload["error_class"] == "server_error"
    assert completed.payload["model"] == "openai:gpt-4o" and completed.payload["inbound_shape"] == "anthropic"


async def test_the_serve_factory_builds_a_ready_app(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import httpx

    from metis_core.gateway.serve import build_app

    monkeypatch.setenv("METIS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("METIS_GATEWAY_WORKSPACE", str(tmp_path))
    monkeypatch.setenv("METIS_GATEWAY_MAX_BODY_BYTES", "1000")
    app = build_app()
    service = app.state.service
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://gw") as client:
            assert (await client.get("/readyz")).json() == {"status": "ready"}
            assert (await client.get("/healthz")).status_code == 200
            assert (await client.get("/v1/models")).status_code == 401
            too_big = await client.post("/v1/messages", content=b"x" * 2000, headers={"x-api-key": "mk_x"})
            assert too_big.status_code == 401  # the key is checked before the body is read
        assert service.settings.max_body_bytes == 1000
    finally:
        service.close()


def test_concurrent_calls_are_each_a_full_turn_on_the_record_after_shutdown_without_a_drain(
    tmp_path: Path, upstream: ReplayServer
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from metis_core.store.sessions import SessionStore
    from metis_core.trace.store import TraceStore

    gateway = GatewayHarness(tmp_path / "home", upstream).start()
    _, token = gateway.issue()
    calls = 16
    upstream.script(ANTHROPIC, *[Reply.recording("anthropic", "response__text.json")] * calls)
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)

    def call(i: int) -> str:
        answer = client.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=20,
                                        messages=[{"role": "user", "content": f"question {i}"}])
        return answer.id

    with ThreadPoolExecutor(8) as pool:
        assert len(list(pool.map(call, range(calls)))) == calls
    gateway.stop()  # no drain: closing the service must write whatever the record writer still holds
    store, trace = SessionStore(gateway.runtime.db_path), TraceStore(gateway.runtime.db_path)
    sessions = [s for s in store.list_sessions(limit=100) if s.title and s.title.startswith("gateway anthropic")]
    assert len(sessions) == calls
    asked = sorted(store.load_messages(s.id)[0].text() for s in sessions)
    assert asked == sorted(f"question {i}" for i in range(calls))
    for session in sessions:
        assert [m.role.value for m in store.load_messages(session.id)] == ["user", "assistant"]
        assert [e.type for e in trace.replay(session.id)] == [
            "turn.started", "llm.call_started", "llm.call_completed", "turn.completed"]


def test_shutdown_closes_the_upstream_connections_on_the_serving_loop_and_writes_the_record(
    tmp_path: Path, upstream: ReplayServer, recwarn: pytest.WarningsRecorder
) -> None:
    """`metis gateway serve` runs the app's lifespan: on shutdown the service closes itself on the loop
    its upstream connections live on, after the record writer has written everything."""
    import gc

    from metis_core.store.sessions import SessionStore

    gateway = GatewayHarness(tmp_path / "home", upstream, lifespan="on").start()
    _, token = gateway.issue()
    upstream.script(ANTHROPIC, Reply.recording("anthropic", "response__text.json"))
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    client.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=20,
                           messages=[{"role": "user", "content": "one question"}])
    owned = gateway.runtime.client._transport.owned_async
    assert len(owned._sessions) == 1  # the call went upstream on the gateway's own aiohttp session
    gateway.stop()
    assert owned._sessions == {}  # closed by the app's shutdown, on its loop
    assert gateway.runtime.bus.closed
    gc.collect()
    assert not [w for w in recwarn if "Unclosed" in str(w.message)]
    sessions = [s for s in SessionStore(gateway.runtime.db_path).list_sessions(limit=10)
                if s.title and s.title.startswith("gateway anthropic")]
    assert len(sessions) == 1


def test_gateway_calls_leave_no_per_session_cost_entry_behind(gateway: GatewayHarness) -> None:
    """Each gateway call is a session of its own: the runtime's running per-session totals (agent
    budgets) keep none of them, so a long-running gateway's memory does not grow per call."""
    _, token = gateway.issue()
    gateway.upstream.script(ANTHROPIC, *[Reply.recording("anthropic", "response__text.json")] * 5)
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    held = gateway.runtime.costs.sessions()
    for _ in range(5):
        client.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=20,
                               messages=[{"role": "user", "content": "hi"}])
    gateway.drain()
    gateway.runtime.bus.flush()
    completed = gateway.of_type("llm.call_completed")
    assert len(completed) == 5 and all(Decimal(str(e.payload["cost_usd"])) > 0 for e in completed)
    assert gateway.runtime.costs.sessions() == held


def test_a_gateway_call_records_what_it_was_asked_for_replay(gateway: GatewayHarness) -> None:
    from metis_core.replay.recorded_options import RecordedRequest

    _, token = gateway.issue()
    gateway.upstream.script(OPENAI, Reply.recording("openai_chat", "response__text.json"))
    client = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    client.chat.completions.create(
        model="openai:gpt-4o", messages=[{"role": "user", "content": "hi"}], temperature=0.25, max_tokens=40,
        stop=["END"], user="customer-7",
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])
    gateway.drain()
    [started] = gateway.of_type("llm.call_started")
    asked = started.payload["request_options"]
    assert (asked["temperature"], asked["max_tokens"], asked["stop"], asked["tools"]) == (0.25, 40, ["END"],
                                                                                          ["get_weather"])
    assert asked["omitted"] == ["extra"] and "customer-7" not in json.dumps(started.payload)
    assert token not in json.dumps(started.payload)
    replayed = RecordedRequest.of(asked)  # what `metis replay` asks with
    assert replayed.options is not None and replayed.options.temperature == 0.25 and replayed.tools == ["get_weather"]
