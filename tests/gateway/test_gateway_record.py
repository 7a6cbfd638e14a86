"""Every gateway call is a session turn on the record: events with the key, shape, user and team,
the messages in the store, and `metis cost --by key|user|team` over them."""

from __future__ import annotations

import json
from decimal import Decimal

import anthropic
import openai
import pytest
from cli.replay_server import ANTHROPIC, OPENAI, Reply
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
