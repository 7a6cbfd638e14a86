"""One recorded scenario on one store, and every view of it agreeing on spend, calls and actors.

The scenario, on SQLite and on PostgreSQL: a plain text turn, a tool-using turn, a structured run
with one retry, a structured run that fails after three priced calls, a call to a model with no price
(all through the `metis` executable), a web-chat turn whose client disconnects (a real `metis serve`
app), and gateway calls through the official SDKs (a real gateway on 127.0.0.1: an answer, a
structured ask that fails after three priced attempts, a stream its client cuts). The truth is each
session's llm.call_completed events; `metis cost`, `metis sessions list`, `metis trace tree`, the serve
JSON API, the exports and the gateway's key counters must all say the same. A new view belongs here,
so that it cannot disagree silently.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from cli.cli_harness import cli_env, metis, stored_events, write_file_call_stream
from cli.replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply
from gateway.gateway_harness import GatewayHarness
from postgres_server import shared_server
from server.server_support import LiveServer
from store_backends import BACKENDS, _postgres_session  # noqa: F401
from structured_wire import WIRES, anthropic_stream

from metis_core.adapters.client import ModelClient
from metis_core.agent.runtime import Runtime
from metis_core.cli.render import cost_text
from metis_core.events.envelope import Event
from metis_core.events.recorder import EventRecorder
from metis_core.store.backend import DATABASE_URL_ENV
from metis_core.store.gateway_keys import open_gateway_key_store
from metis_core.transport.retry import RetryPolicy

PRICED = "anthropic:claude-haiku-4-5"
UNPRICED = "openai_compatible:my-local-model"
SCHEMA = {"title": "numbers", "type": "array", "items": {"type": "integer"}}
CLAUDE = next(w for w in WIRES if w.model == "anthropic:claude-sonnet-4-5")  # structured via output_config
GATEWAY_SESSIONS = ("gateway", "gateway_failed", "gateway_cut")


@dataclass(frozen=True)
class Truth:
    """A session's spend as its trace tells it: the priced calls' sum, the calls, the unpriced ones."""

    cost: Decimal
    calls: int
    unpriced: int

    @classmethod
    def of(cls, events: list[Event]) -> Truth:
        completed = [e for e in events if e.type == "llm.call_completed"]
        unpriced = [e for e in completed if e.payload["pricing_version"] == "unpriced"]
        cost = sum((Decimal(str(e.payload["cost_usd"])) for e in completed if e not in unpriced), Decimal(0))
        return cls(cost, len(completed), len(unpriced))


@dataclass
class Scenario:
    home: Path
    workspace: Path
    env: dict[str, str]
    database: Path | str
    sessions: dict[str, str]
    """What each session was (text, tools, retry, failed, unpriced, disconnect, gateway ...) → its id."""
    gateway_key: str
    gateway_spent: Decimal


def _run(scenario_env: dict[str, str], workspace: Path, *args: str) -> str:
    done = metis(["run", "--json", *args], scenario_env, workspace)
    assert done.returncode in (0, 4), done.stderr  # 4: the failing structured run
    return str(json.loads(done.stdout)["session_id"])


def _disconnected_chat_turn(home: Path, server: ReplayServer, workspace: Path) -> str:
    """A web-chat turn whose client leaves mid-answer; returns its session id once it is on the record."""
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse",
                                             stall_before=b"event: content_block_stop"))
    client = ModelClient(base_urls={"anthropic": server.base_url}, api_keys={"anthropic": "sk-ant-test-one-truth"},
                         retry=RetryPolicy(max_retries=0))
    runtime = Runtime(home=home, client=client, configured_providers={"anthropic"})
    seen = EventRecorder()
    runtime.bus.subscribe(seen.subscription())
    live = LiveServer(runtime, workspace)
    try:
        made = httpx.post(f"{live.url}/api/chat/sessions", json={"model": PRICED}, cookies=live.cookies, timeout=10)
        session_id = str(made.json()["session"]["id"])
        with httpx.stream("POST", f"{live.url}/api/chat/sessions/{session_id}/messages",
                          json={"text": "tell me a story"}, cookies=live.cookies, timeout=10) as answer:
            for line in answer.iter_lines():
                if line == "event: text.delta":
                    break  # the client goes away mid-answer
        deadline = time.monotonic() + 10
        while not seen.of_type("turn.cancelled") and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        live.stop()
        runtime.close()
    return session_id


def _gateway_calls(home: Path, server: ReplayServer, database: Path | str) -> tuple[dict[str, str], str, Decimal]:
    """Through a real gateway, with the official SDKs: an answer, a structured ask exhausted after three
    priced attempts, a stream its client cuts. Returns their session ids, the key's id and its spend."""
    gateway = GatewayHarness(home, server, key_store=open_gateway_key_store(database)).start()
    sessions: dict[str, str] = {}
    try:
        key_id, token = gateway.issue(name="one-truth", budget_usd=Decimal("100"), budget_period="day")
        server.script(ANTHROPIC, Reply.recording("anthropic", "response__text.json"))
        anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0).messages.create(
            model=PRICED, max_tokens=20, messages=[{"role": "user", "content": "hi"}])
        sessions["gateway"] = gateway.of_type("turn.completed")[-1].session_id
        server.script(ANTHROPIC, *[Reply(200, CLAUDE.answer('{"age": "old"}').content, "application/json")] * 3)
        with pytest.raises(openai.APIStatusError):
            openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0).chat.completions.create(
                model=CLAUDE.model, messages=[{"role": "user", "content": "Ollama is 22."}], response_format={
                    "type": "json_schema", "json_schema": {"name": "Person", "schema": {
                        "type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}}})
        sessions["gateway_failed"] = gateway.of_type("turn.completed")[-1].session_id
        server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse",
                                                 stall_before=b"event: content_block_stop"))
        with anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0).messages.stream(
                model=PRICED, max_tokens=20, messages=[{"role": "user", "content": "say hello"}]) as stream:
            for text in stream.text_stream:
                if "!" in text:
                    break  # the client goes away mid-answer
        sessions["gateway_cut"] = gateway.cancelled_turn().session_id
        gateway.drain()
        return sessions, key_id, gateway.spent_today(key_id)
    finally:
        gateway.stop()


@pytest.fixture(scope="module", params=BACKENDS)
def scenario(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             _postgres_session: None) -> Iterator[Scenario]:  # noqa: F811
    root = tmp_path_factory.mktemp("one-truth")
    home, workspace = root / "home", root / "workspace"
    home.mkdir()
    workspace.mkdir()
    database: Path | str = home / "metis.db"
    on_postgres = pytest.MonkeyPatch()
    if request.param == "postgres":  # every store of the CLI, `metis serve` and the gateway on one database
        database = shared_server().fresh_database_url()
        on_postgres.setenv(DATABASE_URL_ENV, database)
    server = ReplayServer().start()
    try:
        env = cli_env(home, server.base_url, METIS_OPENAI_COMPATIBLE_BASE_URL=f"{server.base_url}/v1")
        if request.param == "postgres":
            env[DATABASE_URL_ENV] = str(database)
        schema = workspace / "numbers.schema.json"
        schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
        sessions: dict[str, str] = {}
        server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
        sessions["text"] = _run(env, workspace, "--model", PRICED, "Say hello")
        server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "x")),
                      Reply.recording("anthropic", "stream__text_basic.sse"))
        sessions["tools"] = _run(env, workspace, "--yes", "--model", PRICED, "write notes")
        server.script(ANTHROPIC, Reply(200, anthropic_stream('["one", "two"]')),
                      Reply.recording("anthropic", "stream__recorded_structured_output.sse"))
        sessions["retry"] = _run(env, workspace, "--schema", str(schema), "Two numbers please")
        server.script(ANTHROPIC, *[Reply(200, anthropic_stream('["one", "two"]')) for _ in range(3)])
        sessions["failed"] = _run(env, workspace, "--retries", "2", "--schema", str(schema), "Two numbers please")
        server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
        sessions["unpriced"] = _run(env, workspace, "--model", UNPRICED, "hi")
        sessions["disconnect"] = _disconnected_chat_turn(home, server, workspace)
        through_gateway, key_id, spent = _gateway_calls(home, server, database)
        yield Scenario(home, workspace, env, database, {**sessions, **through_gateway}, key_id, spent)
    finally:
        server.stop()
        on_postgres.undo()


def _events(scenario: Scenario, name: str) -> list[Event]:
    return stored_events(scenario.home, scenario.sessions[name], database=scenario.database)


def _truth(scenario: Scenario, name: str) -> Truth:
    return Truth.of(_events(scenario, name))


def _cli(scenario: Scenario, *args: str) -> str:
    done = metis(list(args), scenario.env, scenario.workspace)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_scenario_recorded_what_it_set_out_to(scenario: Scenario) -> None:
    truths = {name: _truth(scenario, name) for name in scenario.sessions}
    assert truths["retry"].calls == 2 and truths["failed"].calls == 3 and truths["tools"].calls == 2
    assert truths["unpriced"] == Truth(Decimal(0), 1, 1)
    assert truths["disconnect"].calls == 0 and truths["gateway"].calls == 1
    assert truths["gateway_failed"].calls == 3 and truths["gateway_cut"].calls == 1
    assert all(truths[n].cost > 0 for n in ("text", "tools", "retry", "failed", *GATEWAY_SESSIONS))


def test_metis_cost_per_session_is_the_sum_of_the_sessions_call_events(scenario: Scenario) -> None:
    rows = {row["key"]: row for row in json.loads(_cli(scenario, "cost", "--json"))["session"]}
    for name, session_id in scenario.sessions.items():
        truth = _truth(scenario, name)
        row = rows.get(session_id, {"cost_usd": "0", "calls": 0, "unpriced_calls": 0})
        assert (Decimal(row["cost_usd"]), row["calls"], row["unpriced_calls"]) == \
               (truth.cost, truth.calls, truth.unpriced), name
    for name in ("failed", "gateway_failed"):  # `--session` reads one session's calls the same way
        total = json.loads(_cli(scenario, "cost", "--session", scenario.sessions[name], "--json"))["total"]
        assert (Decimal(total["cost_usd"]), total["calls"]) == (_truth(scenario, name).cost, 3), name


def test_metis_cost_over_everything_is_the_sum_over_every_session(scenario: Scenario) -> None:
    truths = [_truth(scenario, name) for name in scenario.sessions]
    total = json.loads(_cli(scenario, "cost", "--json"))["total"]
    assert Decimal(total["cost_usd"]) == sum((t.cost for t in truths), Decimal(0))
    assert total["calls"] == sum(t.calls for t in truths) and total["unpriced_calls"] == 1
    table = _cli(scenario, "cost")
    assert cost_text(Decimal(total["cost_usd"]), 1) in table and "1 call unpriced" in table


def test_the_session_list_shows_the_same_spend(scenario: Scenario) -> None:
    rows = {line.split("\t")[0]: line.split("\t") for line in _cli(scenario, "sessions", "list").splitlines()}
    for name, session_id in scenario.sessions.items():
        truth = _truth(scenario, name)
        assert rows[session_id][4] == cost_text(truth.cost, truth.unpriced), name
    assert rows[scenario.sessions["unpriced"]][4] == "cost unknown (1 call unpriced)"
    listed = {row["id"]: row for row in json.loads(_cli(scenario, "sessions", "list", "--json"))}
    for name, session_id in scenario.sessions.items():
        truth = _truth(scenario, name)
        row = listed[session_id]
        assert (Decimal(row["total_cost_usd"]), row["unpriced_message_count"]) == (truth.cost, truth.unpriced), name


def test_the_trace_tree_shows_each_call_and_the_turn_total(scenario: Scenario) -> None:
    tree = _cli(scenario, "trace", "tree", scenario.sessions["unpriced"])
    call_line = next(line for line in tree.splitlines() if "llm.call_completed" in line)
    turn_line = next(line for line in tree.splitlines() if "turn.completed" in line)
    assert "cost unknown" in call_line and "$0" not in call_line
    assert "cost unknown (1 call unpriced)" in turn_line and "$0" not in turn_line
    ended_line = next(line for line in tree.splitlines() if "session.ended" in line)
    assert "cost unknown (1 call unpriced)" in ended_line and "$0" not in ended_line
    for name in ("failed", "gateway_failed"):
        failed = _truth(scenario, name)
        tree = _cli(scenario, "trace", "tree", scenario.sessions[name])
        turn_line = next(line for line in tree.splitlines() if "turn.completed" in line)
        assert "3 calls" in turn_line and cost_text(failed.cost, 0) in turn_line, name


def test_the_serve_json_api_shows_the_same_spend(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    if isinstance(scenario.database, str):  # `metis serve` on the scenario's PostgreSQL database
        monkeypatch.setenv(DATABASE_URL_ENV, scenario.database)
    runtime = Runtime(home=scenario.home)
    live = LiveServer(runtime, scenario.workspace)
    try:
        http = live.client()
        listed = {s["id"]: s for s in http.get("/api/sessions").json()["sessions"]}
        model_rows: dict[str, dict[str, object]] = {row["key"]: row for row in http.get("/api/cost").json()["model"]}
        for name, session_id in scenario.sessions.items():
            truth = _truth(scenario, name)
            detail = http.get(f"/api/sessions/{session_id}").json()
            totals = detail["totals"]
            assert (Decimal(totals["cost_usd"]), totals["model_calls"], totals["unpriced_message_count"]) == \
                   (truth.cost, truth.calls, truth.unpriced), name
            assert (Decimal(listed[session_id]["total_cost_usd"]), listed[session_id]["unpriced_calls"]) == \
                   (truth.cost, truth.unpriced), name
            answers = [e for e in _events(scenario, name) if e.type == "llm.call_completed"]
            if answers:  # the list names the model that answered, as `metis sessions list` does
                assert listed[session_id]["answered_by"] == answers[-1].payload["model"], name
        unpriced_timeline = http.get(f"/api/console/sessions/{scenario.sessions['unpriced']}/timeline").json()
        [turn_span] = [span for span in unpriced_timeline["spans"] if span["kind"] == "turn"]
        assert (turn_span["cost_usd"], turn_span["unpriced_calls"]) == (None, 1)  # the waterfall: unknown, never $0
    finally:
        live.stop()
        runtime.close()
    assert model_rows[UNPRICED]["cost_usd"] is None and model_rows[UNPRICED]["unpriced_calls"] == 1
    by_model: dict[str, list[Event]] = {}
    for session_id in scenario.sessions.values():
        for event in stored_events(scenario.home, session_id, database=scenario.database):
            if event.type == "llm.call_completed":
                by_model.setdefault(event.payload["model"], []).append(event)
    assert set(model_rows) == set(by_model)
    for model, calls in by_model.items():
        truth = Truth.of(calls)
        row = model_rows[model]
        cost = None if row["cost_usd"] is None else Decimal(str(row["cost_usd"]))
        assert (cost, row["calls"], row["unpriced_calls"]) == \
               (None if truth.unpriced == truth.calls else truth.cost, truth.calls, truth.unpriced), model


def test_the_exports_never_price_an_unpriced_call_and_carry_the_priced_ones(scenario: Scenario) -> None:
    otel = json.loads(_cli(scenario, "trace", "export", scenario.sessions["unpriced"], "--format", "otel"))
    keys = {a["key"] for r in otel["resourceSpans"] for s in r["scopeSpans"] for span in s["spans"]
            for a in span["attributes"]}
    assert "metis.cost_usd" not in keys and "metis.unpriced_calls" in keys  # unknown, never 0.0
    openwop = _cli(scenario, "trace", "export", scenario.sessions["unpriced"], "--format", "openwop")
    assert "costEstimateUsd" not in openwop
    assert _values(openwop, "totalCostUsd") == [] and _values(openwop, "unpricedCalls") == [1]
    eventlog = _cli(scenario, "trace", "export", scenario.sessions["unpriced"], "--format", "eventlog")
    assert _values(eventlog, "total_cost_usd") == []  # SESSION_END: unknown is left out, never 0.0
    eventlog = _cli(scenario, "trace", "export", scenario.sessions["failed"], "--format", "eventlog")
    assert [Decimal(str(v)) for v in _values(eventlog, "total_cost_usd")] == [_truth(scenario, "failed").cost]
    priced = _cli(scenario, "trace", "export", scenario.sessions["failed"], "--format", "openwop")
    costs = [Decimal(str(u)) for u in _values(priced, "costEstimateUsd")]
    assert len(costs) == 3 and sum(costs) == _truth(scenario, "failed").cost


def test_the_gateway_key_counters_are_the_gateway_sessions_spend(scenario: Scenario) -> None:
    spent = sum((_truth(scenario, name).cost for name in GATEWAY_SESSIONS), Decimal(0))
    assert scenario.gateway_spent == spent > 0
    [key] = [k for k in json.loads(_cli(scenario, "gateway", "keys", "list", "--json")) if k["name"] == "one-truth"]
    assert (Decimal(key["spent_usd"]), Decimal(key["reserved_usd"])) == (spent, 0)
    by_key = {row["key"]: row for row in json.loads(_cli(scenario, "cost", "--by", "key", "--json"))["key"]}
    assert Decimal(by_key[scenario.gateway_key]["cost_usd"]) == spent
    assert by_key[scenario.gateway_key]["calls"] == sum(_truth(scenario, n).calls for n in GATEWAY_SESSIONS)


def test_who_ended_each_turn_is_on_the_record(scenario: Scenario) -> None:
    for name in ("disconnect", "gateway_cut"):  # a client that left: the system records it, not a user cancel
        events = stored_events(scenario.home, scenario.sessions[name], database=scenario.database)
        [cancelled] = [e for e in events if e.type == "turn.cancelled"]
        assert (cancelled.actor.value, cancelled.payload["reason"]) == ("system", "client_disconnect"), name
    for name in ("retry", "failed", "text", "gateway_failed"):
        events = stored_events(scenario.home, scenario.sessions[name], database=scenario.database)
        started = next(e for e in events if e.type == "turn.started")
        assert started.actor.value == "user", name


def _values(document: str, key: str) -> list[object]:
    """Every value of `key` anywhere in a JSON or JSON Lines document."""
    found: list[object] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == key:
                    found.append(v)
                walk(v)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for line in document.splitlines():
        if line.strip():
            walk(json.loads(line))
    return found
