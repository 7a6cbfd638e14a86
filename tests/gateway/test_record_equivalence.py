"""The record of a fixed series of gateway calls, normalized (ids numbered by first appearance,
times and latencies masked), equals the golden copy written by the record pipeline before its fast
paths (multi-row trace and conversation inserts, buffered trace rows, the inlined bus dispatch):
the same events in the same order with the same payloads, the same session, message and tool rows.

Regenerate with METIS_WRITE_RECORD_GOLDEN=1 only when the record is meant to change.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import anthropic
import openai
from cli.replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply

from .gateway_harness import GatewayHarness

GOLDEN = Path(__file__).parent / "record_golden.json"
_ID = re.compile(r"\b(?:[a-z]+_)?[0-9A-HJKMNP-TV-Z]{26}\b")
_MASKED_KEYS = {"latency_ms", "wall_time_seconds", "timestamp_us", "created_at", "updated_at", "completed_at"}
_TABLES = {
    "events": "SELECT session_id, turn_id, parent_event_id, type, actor, sensitivity, payload_json FROM events "
              "WHERE session_id LIKE 'sess_%' ORDER BY id",
    "sessions": "SELECT * FROM sessions ORDER BY id",
    "messages": "SELECT * FROM messages ORDER BY id",
    "tool_calls": "SELECT * FROM tool_calls ORDER BY created_at, id",
}


WEATHER: Any = {"name": "get_weather", "description": "weather", "input_schema": {"type": "object", "properties": {
    "location": {"type": "string"}, "unit": {"type": "string"}}}}


def _calls(gateway: GatewayHarness, token: str) -> None:
    """One after another, so the record's order is the calls' order."""
    claude = anthropic.Anthropic(base_url=gateway.base_url, api_key=token, max_retries=0)
    gpt = openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    gateway.upstream.script(ANTHROPIC, Reply.recording("anthropic", "response__text.json"),
                            Reply.recording("anthropic", "response__tool_use.json"),
                            Reply.recording("anthropic", "error__529_overloaded_error.json", 529),
                            Reply.recording("anthropic", "stream__tool_use_input_json_delta.sse"))
    gateway.upstream.script(OPENAI, *[Reply.recording("openai_chat", "response__text.json")] * 2,
                            Reply.recording("openai_chat", "response__tool_call_single.json"))
    claude.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=20, messages=[
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "weather?"}])  # fmt: skip
    gpt.chat.completions.create(model="openai:gpt-4o", messages=[{"role": "user", "content": "hi ✓"}])
    claude.messages.create(model="anthropic:claude-haiku-4-5", max_tokens=50, messages=[
        {"role": "user", "content": "weather in Paris?"}], tools=[WEATHER])
    claude.messages.create(model="anthropic:claude-haiku-4-5,openai:gpt-4o", max_tokens=20,
                           messages=[{"role": "user", "content": "fall back"}])
    function = {"name": "GetWeatherArgs", "parameters": {"type": "object", "properties": {}}}
    gpt.chat.completions.create(model="openai:gpt-4o", messages=[{"role": "user", "content": "weather?"}],
                                tools=[{"type": "function", "function": function}])  # type: ignore[list-item]
    with claude.messages.stream(model="anthropic:claude-haiku-4-5", max_tokens=50, tools=[WEATHER],
                                messages=[{"role": "user", "content": "stream it"}]) as stream:
        stream.get_final_message()
    gateway.drain()


def _normalized(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {_normalized(k, ids): "<masked>" if k in _MASKED_KEYS else _normalized(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalized(v, ids) for v in value]
    if isinstance(value, str):
        if value[:1] in "[{":
            try:
                return _normalized(json.loads(value), ids)
            except ValueError:
                pass
        return _ID.sub(lambda m: ids.setdefault(m.group(0), f"<id {len(ids)}>"), value)
    return value


def _record(db: Path) -> dict[str, Any]:
    ids: dict[str, str] = {}
    found: dict[str, Any] = {}
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        for table, query in _TABLES.items():
            rows = [dict(row) for row in conn.execute(query)]
            found[table] = [_normalized(row, ids) for row in rows]
    return found


def test_the_record_of_a_series_of_gateway_calls_equals_the_golden_record(
    tmp_path: Path, upstream: ReplayServer
) -> None:
    gateway = GatewayHarness(tmp_path / "home", upstream).start()
    try:
        _, token = gateway.issue()
        _calls(gateway, token)
    finally:
        gateway.stop()
    record = _record(gateway.runtime.db_path)
    if os.environ.get("METIS_WRITE_RECORD_GOLDEN"):
        GOLDEN.write_text(json.dumps(record, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert [e["type"] for e in record["events"]] == [e["type"] for e in golden["events"]]
    for table in _TABLES:
        assert record[table] == golden[table], table
