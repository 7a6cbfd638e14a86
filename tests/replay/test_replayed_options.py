"""Per-call options on the record and in `metis replay`: what a turn asked is kept on each of its
llm.call_started events (never a secret) and asked again by the replay; a session recorded before
options were kept still replays, and the report says what it lacked.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from structured_wire import anthropic_stream
from support_servers import Reply

from metis_core.adapters.base import AdapterOptions
from metis_core.agent.request_options import request_options_record
from metis_core.agent.structured_turn import run_structured_turn
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.events.catalog import make_event
from metis_core.replay.recorded_options import NOT_RECORDED, RecordedRequest
from metis_core.replay.session_replay import replay_session
from metis_core.structured.policy import OutputPolicy
from metis_core.structured.spec import output_spec

from .conftest import ORIGINAL_MODEL, USER_TEXTS, ReplayHarness

TARGET = "anthropic:claude-sonnet-4-5"
SECRET = "sk-ant-api03-" + "x" * 40
ASKED = AdapterOptions(model="", temperature=0.3, max_tokens=321, stop=["END"], tool_choice="auto",
                       extra={"metadata": {"user_id": SECRET}})
NUMBERS = {"title": "numbers", "type": "array", "items": {"type": "integer"}}


def anthropic(*names: str) -> list[Reply]:
    return [Reply.fixture("anthropic", name) for name in names]


def structured_reply() -> Reply:
    return Reply(200, anthropic_stream(), {"content-type": "text/event-stream"})


async def record_with_options(h: ReplayHarness) -> str:
    h.script.script("anthropic", anthropic("stream__tool_use_input_json_delta.sse", "stream__text_basic.sse",
                                           "stream__text_basic.sse"))
    session = h.runtime.sessions.create(h.workspace)
    for text in USER_TEXTS:
        result = await h.runtime.turns.run(session, text, options=ASKED)
        assert result.error is None, result.error
    h.runtime.sessions.end(session)
    return session.id


def started_options(h: ReplayHarness, session_id: str) -> list[dict[str, Any] | None]:
    return [e.payload.get("request_options") for e in h.events(session_id) if e.type == "llm.call_started"]


def test_the_record_keeps_what_shapes_the_answer_and_no_secret() -> None:
    options = AdapterOptions(
        model="anthropic:claude-sonnet-4-5", temperature=0.0, top_p=0.9, stop=[f"stop {SECRET}"],
        thinking_budget_tokens=2048, reasoning_effort="low", parallel_tool_calls=False,
        tool_choice={"name": "get_weather"}, stream=True, session_id="sess_x",
        hosted_tools={"web_search": {"max_uses": 2, "allowed_domains": ["example.com"]},
                      "mcp": {"server_url": "https://mcp.example.com", "authorization_token": SECRET,
                              "headers": {"x-api-key": SECRET}}},
        provider_tools=[{"type": "mcp", "authorization_token": SECRET}], extra={"provider": {"order": ["a"]}},
    )
    spec = output_spec({"type": "object", "properties": {"api_key_name": {"type": "string"},
                                                         "token_count": {"type": "integer"}}}, name="fields")
    record = request_options_record(options, tools=["get_weather", "read_file"], output=spec,
                                    policy=OutputPolicy(max_retries=1, nl_to_format=True))
    assert SECRET not in json.dumps(record)
    assert record["temperature"] == 0.0 and record["top_p"] == 0.9 and record["thinking_budget_tokens"] == 2048
    assert record["stop"] == ["stop [redacted key]"] and record["tool_choice"] == {"name": "get_weather"}
    assert record["hosted_tools"] == {"web_search": {"max_uses": 2, "allowed_domains": ["example.com"]},
                                      "mcp": {"server_url": "https://mcp.example.com"}}
    assert record["omitted"] == ["hosted_tools.mcp.authorization_token", "hosted_tools.mcp.headers", "extra",
                                 "provider_tools"]
    assert record["tools"] == ["get_weather", "read_file"]
    assert set(record["output"]["json_schema"]["properties"]) == {"api_key_name", "token_count"}  # names stay
    assert (record["output"]["max_retries"], record["output"]["nl_to_format"]) == (1, True)
    assert not {"model", "session_id", "stream"} & set(record)
    make_event("llm.call_started", {"model": options.model, "provider": "anthropic", "estimated_input_tokens": 1,
                                    "request_id": "r", "is_worker": False, "request_options": record},
               session_id="sess_x")  # the catalog accepts it
    back = RecordedRequest.of(record)
    assert back.options is not None and back.options.temperature == 0.0 and back.options.hosted_tools["web_search"]
    assert back.output is not None and back.output.name == "fields" and back.policy == OutputPolicy(
        max_retries=1, nl_to_format=True)
    assert [why.split(":")[0] for why in back.lacking] == record["omitted"]


def test_a_value_the_catalog_would_refuse_is_named_not_kept_so_the_call_is_still_recorded() -> None:
    record = request_options_record(AdapterOptions(model="m:x", max_tokens=-5, temperature=0.5,
                                                   reasoning_effort="ultra"))  # type: ignore[arg-type]
    assert record == {"temperature": 0.5, "omitted": ["max_tokens", "reasoning_effort"]}
    assert RecordedRequest.of(record).lacking == [
        "max_tokens: its value could not be recorded; replayed without it",
        "reasoning_effort: its value could not be recorded; replayed without it"]
    make_event("llm.call_started", {"model": "m:x", "provider": "m", "estimated_input_tokens": 1, "request_id": "r",
                                    "is_worker": False, "request_options": record}, session_id="sess_x")


async def test_every_call_of_a_turn_records_the_options_it_was_asked_with(harness: ReplayHarness) -> None:
    h = harness
    source = await record_with_options(h)
    recorded = started_options(h, source)
    assert len(recorded) == 3  # the tool turn's two calls and the plain turn's one
    first = recorded[0]
    assert first is not None and recorded[1] == first
    assert (first["temperature"], first["max_tokens"], first["stop"], first["tool_choice"]) == (0.3, 321, ["END"],
                                                                                               "auto")
    assert first["tools"] == h.runtime.tools.names() and "get_weather" in first["tools"]
    assert first["omitted"] == ["extra"]
    assert SECRET not in json.dumps([e.payload for e in h.events(source)])
    sent = h.bodies("anthropic.test")[0]
    assert sent["temperature"] == 0.3 and sent["max_tokens"] == 321 and sent["stop_sequences"] == ["END"]


async def test_replay_asks_with_the_recorded_options_and_offers_the_recorded_tools(harness: ReplayHarness) -> None:
    h = harness
    source = await record_with_options(h)
    sent_before = len(h.bodies("anthropic.test"))
    h.script.script("anthropic", anthropic("stream__tool_use_input_json_delta.sse", "stream__text_basic.sse",
                                           "stream__text_basic.sse"))
    live = h.runtime.tools
    h.runtime.tools = ToolRegistry([t for name in live.names() if name != "read_file"
                                    and (t := live.get(name)) is not None])  # a tool gone since the original
    try:
        report = await replay_session(h.runtime, source, TARGET)
    finally:
        h.runtime.tools = live
    replayed = h.bodies("anthropic.test")[sent_before:]
    assert len(replayed) == 3
    for body in replayed:
        assert body["model"] == "claude-sonnet-4-5"
        assert (body["temperature"], body["max_tokens"], body["stop_sequences"]) == (0.3, 321, ["END"])
        assert body["tool_choice"] == {"type": "auto"}
        assert "read_file" not in [t["name"] for t in body["tools"]] and "get_weather" in [t["name"]
                                                                                       for t in body["tools"]]
    first = report.to_json()["turns"][0]["request_options"]
    assert first["recorded"] is True and first["used"]["temperature"] == 0.3
    assert first["lacking"] == [
        "extra: the original's provider-only settings are never kept; replayed without them",
        "tool read_file: offered by the original, not available now; left out"]
    assert [t.diverged for t in report.turns] == [False, False]
    again = started_options(h, report.replay_session_id)
    assert again[0] is not None and again[0]["temperature"] == 0.3  # the replay's own calls are on the record too


def strip_request_options(h: ReplayHarness, session_id: str) -> None:
    """Make the stored session look recorded before request options were kept (the old payload shape)."""
    h.runtime.bus.flush()
    h.runtime.trace.flush()
    with sqlite3.connect(h.home / "metis.db") as conn:
        changed = conn.execute("UPDATE events SET payload_json = json_remove(payload_json, '$.request_options') "
                               "WHERE session_id = ? AND type = 'llm.call_started'", (session_id,)).rowcount
    assert changed == 3


async def test_an_old_record_without_options_replays_with_defaults_and_says_so(harness: ReplayHarness) -> None:
    h = harness
    source = await record_with_options(h)
    strip_request_options(h, source)
    assert started_options(h, source) == [None, None, None]
    sent_before = len(h.bodies("anthropic.test"))
    h.script.script("anthropic", anthropic("stream__tool_use_input_json_delta.sse", "stream__text_basic.sse",
                                           "stream__text_basic.sse"))
    report = await replay_session(h.runtime, source, TARGET)
    replayed = h.bodies("anthropic.test")[sent_before:]
    assert len(replayed) == 3
    assert all("temperature" not in body and "stop_sequences" not in body for body in replayed)
    assert replayed[0]["max_tokens"] != 321  # the adapter's default budget
    for turn in report.to_json()["turns"]:
        assert turn["request_options"] == {"recorded": False, "used": {}, "tools": None, "lacking": [NOT_RECORDED]}
    assert [t.diverged for t in report.turns] == [False, False]


async def test_a_structured_turn_replays_as_a_structured_turn_with_its_schema_and_policy(
    harness: ReplayHarness,
) -> None:
    h = harness
    h.script.script("anthropic", [structured_reply()])
    session = h.runtime.sessions.create(h.workspace)
    out = await run_structured_turn(h.runtime.turns, session, "Two numbers please",
                                    output_spec(NUMBERS, name="numbers"), policy=OutputPolicy(max_retries=1),
                                    options=AdapterOptions(model="", temperature=0.1))
    assert out.output is not None and out.output.value == [12345, 67890]
    h.runtime.sessions.end(session)
    [recorded] = started_options(h, session.id)
    assert recorded is not None and (recorded["output"]["name"], recorded["output"]["max_retries"]) == ("numbers", 1)
    assert recorded["temperature"] == 0.1 and recorded["tools"] is None

    sent_before = len(h.bodies("anthropic.test"))
    h.script.script("anthropic", [structured_reply()])
    report = await replay_session(h.runtime, session.id, TARGET)
    [body] = h.bodies("anthropic.test")[sent_before:]
    assert body["model"] == "claude-sonnet-4-5" and body["temperature"] == 0.1
    assert body["output_config"]["format"]["schema"] == {"type": "array", "items": {"type": "integer"}}
    [turn] = report.turns
    assert turn.replay.answer == "[12345,67890]" and turn.replay.structured_valid is True and not turn.diverged
    assert report.to_json()["turns"][0]["request_options"]["used"] == {"temperature": 0.1, "output": "numbers"}
    assert ORIGINAL_MODEL != TARGET
