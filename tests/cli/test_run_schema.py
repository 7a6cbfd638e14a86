"""`metis run --schema FILE` in a subprocess against Anthropic traffic served on 127.0.0.1.

The success case replays stream__recorded_structured_output.sse (a live structured-output answer,
`[12345,67890]`) verbatim; the violation case first serves the same stream with its text deltas
replaced by one wrong answer; the refusal case replays stream__refusal_stop_details.sse.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from structured_wire import anthropic_stream

from .cli_harness import cli_env, metis, only_session_id, stored_events, stored_messages, types
from .replay_server import ANTHROPIC, ReplayServer, Reply

SCHEMA = {"title": "numbers", "type": "array", "items": {"type": "integer"}}
RECORDED = "stream__recorded_structured_output.sse"


def _schema_file(workspace: Path) -> Path:
    path = workspace / "numbers.schema.json"
    path.write_text(json.dumps(SCHEMA), encoding="utf-8")
    return path


def test_schema_run_prints_the_validated_json(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", RECORDED))
    done = metis(["run", "--schema", str(_schema_file(workspace)), "Two numbers please"],
                 cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [12345, 67890]
    sent = server.bodies(ANTHROPIC)[0]
    assert sent["output_config"]["format"] == {"type": "json_schema",
                                               "schema": {"type": "array", "items": {"type": "integer"}}}


def test_json_output_includes_every_attempt_and_the_retry_is_on_the_record(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, anthropic_stream('["one", "two"]')), Reply.recording("anthropic", RECORDED))
    done = metis(["run", "--json", "--schema", str(_schema_file(workspace)), "Two numbers please"],
                 cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["value"] == [12345, 67890] and doc["structured_mode"] == "json_schema"
    assert [a["outcome"] for a in doc["attempts"]] == ["schema-violation", "ok"]
    wrong = 'must satisfy type "integer"'
    assert doc["attempts"][0]["errors"] == [f"$[0]: {wrong}", f"$[1]: {wrong}"]
    corrective = json.dumps(server.bodies(ANTHROPIC)[1]["messages"][-1])
    assert "must satisfy type" in corrective and "one" not in corrective and "two" not in corrective
    events = stored_events(home, only_session_id(home))
    assert types(events).count("llm.call_completed") == 2
    retried = [e for e in events if e.type == "llm.output_retried"]
    assert len(retried) == 1 and retried[0].payload["reason"] == "schema-violation"
    assert retried[0].parent_event_id == next(e for e in events if e.type == "llm.call_completed").id


def test_a_refusal_exits_5_after_one_call_with_the_providers_words(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__refusal_stop_details.sse"))
    done = metis(["run", "--json", "--schema", str(_schema_file(workspace)), "Two numbers please"],
                 cli_env(home, server.base_url), workspace)
    assert done.returncode == 5
    doc = json.loads(done.stdout)
    assert doc["value"] is None and [a["outcome"] for a in doc["attempts"]] == ["refusal"]
    assert "This request was refused due to policy." in doc["error"]
    assert len(server.requests) == 1
    refused = [e for e in stored_events(home, only_session_id(home)) if e.type == "llm.output_refused"]
    assert refused[0].payload["safety_category"] == "cyber"


def test_a_schema_file_that_is_not_json_schema_exits_2(home: Path, server: ReplayServer, workspace: Path) -> None:
    bad = workspace / "bad.json"
    bad.write_text('{"type": 12}', encoding="utf-8")
    done = metis(["run", "--schema", str(bad), "hi"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 2 and "not valid JSON Schema" in done.stderr
    assert server.requests == []


def _trace_spend(home: Path, session_id: str) -> tuple[Decimal, int]:
    calls = [e for e in stored_events(home, session_id) if e.type == "llm.call_completed"]
    return sum((Decimal(str(e.payload["cost_usd"])) for e in calls), Decimal(0)), len(calls)


def test_a_run_that_fails_after_three_priced_calls_is_charged_for_all_three(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, *[Reply(200, anthropic_stream('["one", "two"]')) for _ in range(3)])
    env = cli_env(home, server.base_url)
    done = metis(["run", "--json", "--retries", "2", "--schema", str(_schema_file(workspace)), "Two numbers"],
                 env, workspace)
    assert done.returncode != 0 and len(server.requests) == 3
    doc = json.loads(done.stdout)
    assert [a["outcome"] for a in doc["attempts"]] == ["schema-violation"] * 3 and doc["usage"]["llm_calls"] == 3
    spent, calls = _trace_spend(home, only_session_id(home))
    assert calls == 3 and spent > 0 and Decimal(doc["cost_usd"]) == spent
    cost = json.loads(metis(["cost", "--session", "latest", "--json"], env, workspace).stdout)["total"]
    assert (Decimal(cost["cost_usd"]), cost["calls"], cost["unpriced_calls"]) == (spent, 3, 0)
    shown = metis(["cost", "--session", "latest"], env, workspace).stdout
    assert "no model calls recorded yet" not in shown


def test_a_run_with_one_retry_is_charged_for_both_calls(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, Reply(200, anthropic_stream('["one", "two"]')), Reply.recording("anthropic", RECORDED))
    env = cli_env(home, server.base_url)
    done = metis(["run", "--schema", str(_schema_file(workspace)), "Two numbers"], env, workspace)
    assert done.returncode == 0, done.stderr
    spent, calls = _trace_spend(home, only_session_id(home))
    cost = json.loads(metis(["cost", "--session", "latest", "--json"], env, workspace).stdout)["total"]
    assert (Decimal(cost["cost_usd"]), cost["calls"]) == (spent, calls) == (spent, 2)
    [answer] = [m for m in stored_messages(home, only_session_id(home)) if m.role.value == "assistant"]
    assert answer.text() == "[12345,67890]"  # still one answer in the conversation, carrying both calls


def test_json_output_keeps_the_attempts_made_before_a_provider_error_ended_the_run(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, anthropic_stream('["one", "two"]')),
                  Reply.recording("anthropic", "error__400_invalid_request_error_bad_shape.json", 400))
    done = metis(["run", "--json", "--schema", str(_schema_file(workspace)), "Two numbers"],
                 cli_env(home, server.base_url), workspace)
    assert done.returncode == 4
    doc = json.loads(done.stdout)
    assert doc["usage"]["llm_calls"] == 2 and [a["outcome"] for a in doc["attempts"]] == ["schema-violation"]
