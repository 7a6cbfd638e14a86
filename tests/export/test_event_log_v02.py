"""Event log v0.2 export: payload and envelope schemas, the mapping, redaction by default."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from ulid import ULID

from metis_core.export import ExportOptions, SessionRecording, event_log_entries
from metis_core.export.event_log_schemas import ENTRY_SCHEMA, PAYLOAD_SCHEMAS, REDACTED
from metis_core.hashing import json_hash

from .conftest import USER_TEXTS, by_type


def entries_of(recording: SessionRecording, include_content: bool = False) -> list[dict[str, Any]]:
    return event_log_entries(recording, ExportOptions(include_content=include_content))[0]


def test_the_nine_payload_schemas_are_valid_2020_12_schemas() -> None:
    assert sorted(PAYLOAD_SCHEMAS) == sorted([
        "SESSION_START", "SESSION_END", "TOOL_CALL", "TOOL_RESULT", "MODEL_REQUEST", "MODEL_RESPONSE",
        "DECISION_TRACE", "ERROR", "ANNOTATION"])
    for schema in [*PAYLOAD_SCHEMAS.values(), ENTRY_SCHEMA]:
        Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("include_content", [False, True])
def test_every_entry_and_payload_validates(recording: SessionRecording, include_content: bool) -> None:
    envelope = Draft202012Validator(ENTRY_SCHEMA, format_checker=FormatChecker())
    for entry in entries_of(recording, include_content):
        envelope.validate(entry)
        Draft202012Validator(PAYLOAD_SCHEMAS[entry["event_type"]], format_checker=FormatChecker()).validate(
            entry["payload"])


@pytest.mark.parametrize(("event_type", "payload"), [
    ("MODEL_RESPONSE", {"model": "m", "content": REDACTED, "role": "assistant", "finish_reason": "stop"}),
    ("TOOL_CALL", {"tool_name": "t", "args": {REDACTED: True}}),
    ("TOOL_RESULT", {"tool_name": "t", "result": REDACTED, "status": "success", "duration_ms": 1}),
    ("MODEL_REQUEST", {"model": "m", "provider": "p", "messages": [{"role": "user", "content": REDACTED}]}),
    ("DECISION_TRACE", {"decision_id": "not-a-uuid", "inputs": {}, "outputs": {}, "justification": "x"}),
    ("SESSION_END", {"status": "finished", "duration_ms": 1}),
    ("ERROR", {"error_type": "x", "message": "y"}),
])
def test_schemas_reject_a_redacted_value_without_its_hash_and_other_bad_payloads(
    event_type: str, payload: dict[str, Any]
) -> None:
    validator = Draft202012Validator(PAYLOAD_SCHEMAS[event_type], format_checker=FormatChecker())
    assert not validator.is_valid(payload)


def test_events_map_to_v02_entry_types_in_event_order(recording: SessionRecording) -> None:
    entries, summary = event_log_entries(recording)
    types = [e["event_type"] for e in entries]
    assert types[0] == "SESSION_START" and types[-1] == "SESSION_END"
    events = recording.events
    assert Counter(types) == Counter({
        "SESSION_START": 1, "SESSION_END": 1,
        "MODEL_REQUEST": len(by_type(events, "llm.call_started")),
        "MODEL_RESPONSE": len(by_type(events, "llm.call_completed")),
        "ERROR": len(by_type(events, "llm.call_failed")),
        "TOOL_CALL": 2, "TOOL_RESULT": 2,
        "DECISION_TRACE": len(by_type(events, "route.decided")) + len(by_type(events, "tool.confirmation_resolved")),
        "ANNOTATION": 1,
    })
    assert [e["sequence"] for e in entries] == list(range(len(entries)))
    sources = [e["source_event_id"] for e in entries]
    assert sources == sorted(sources)
    assert dict(summary.skipped) == {"turn.started": 5, "turn.completed": 4, "tool.confirmation_requested": 2,
                                     "routing.provider_unavailable": 1}
    assert summary.exported + summary.skipped_total == summary.events_read


def test_entry_ids_are_uuids_that_read_back_as_the_source_event(recording: SessionRecording) -> None:
    for entry in entries_of(recording):
        assert str(ULID.from_uuid(uuid.UUID(entry["event_id"]))) == entry["source_event_id"]


def test_content_is_redacted_by_default_with_hashes_of_the_plaintext(recording: SessionRecording) -> None:
    redacted, plain = entries_of(recording), entries_of(recording, include_content=True)
    assert len(redacted) == len(plain)
    checked = Counter[str]()
    for hidden, shown in zip(redacted, plain, strict=True):
        kind, hp, sp = hidden["event_type"], hidden["payload"], shown["payload"]
        if kind == "MODEL_REQUEST":
            for hidden_message, shown_message in zip(hp["messages"], sp["messages"], strict=True):
                assert hidden_message["content"] == REDACTED
                assert hidden_message["content_hash"] == json_hash(shown_message["content"])
        elif kind == "MODEL_RESPONSE":
            assert hp["content"] == REDACTED and hp["content_hash"] == json_hash(sp["content"])
        elif kind == "TOOL_CALL":
            assert hp["args"] == {REDACTED: True} and hp["args_hash"] == json_hash(sp["args"])
        elif kind == "TOOL_RESULT":
            assert hp["result"] == REDACTED and hp["result_hash"] == json_hash(sp["result"])
        else:
            assert hp == sp
            continue
        checked[kind] += 1
    assert set(checked) == {"MODEL_REQUEST", "MODEL_RESPONSE", "TOOL_CALL", "TOOL_RESULT"}


def test_model_requests_carry_the_history_stored_before_each_call(recording: SessionRecording) -> None:
    requests = [e["payload"] for e in entries_of(recording, include_content=True) if e["event_type"] == "MODEL_REQUEST"]
    assert requests[0]["messages"] == [{"role": "user", "content": USER_TEXTS[0],
                                        "content_hash": json_hash(USER_TEXTS[0])}]
    second = requests[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[2]["name"] == "get_weather" and second[2]["content"] == "Paris: 73°F, clear"
    assert '[tool_use get_weather tu_' in second[1]["content"] and '{"location":"Paris"}' in second[1]["content"]
    fallback = [r for r in requests if r["model"] in {"gpt-4o", "gemini-2.5-flash"}]
    assert [r["provider"] for r in fallback] == ["openai", "gemini"]
    assert fallback[0]["messages"] == fallback[1]["messages"]  # the same history, retried elsewhere


def test_responses_errors_decisions_and_results_carry_the_recorded_values(recording: SessionRecording) -> None:
    entries = entries_of(recording, include_content=True)
    payloads = {kind: [e["payload"] for e in entries if e["event_type"] == kind] for kind in PAYLOAD_SCHEMAS}
    first = payloads["MODEL_RESPONSE"][0]
    assert first["finish_reason"] == "tool_calls"
    assert first["usage"] == {"prompt_tokens": 377, "completion_tokens": 65, "total_tokens": 442}
    assert [(p["error_type"], p["fatal"]) for p in payloads["ERROR"]] == [("server_error", False),
                                                                          ("rate_limit", False)]
    assert [(p["status"], p["result"]) for p in payloads["TOOL_RESULT"]] == [
        ("success", "Paris: 73°F, clear"), ("error", "error: the user denied running get_weather")]
    created = by_type(recording.events, "session.created")[0]
    routes = [p for p in payloads["DECISION_TRACE"] if "chosen_model" in p["outputs"]]
    assert all(p["policy_version"] == created.payload["routing_policy_version"] for p in routes)
    assert routes[0]["justification"] == "global_default: global default"
    confirmations = [p["outputs"] for p in payloads["DECISION_TRACE"] if "decision" in p["outputs"]]
    assert confirmations == [{"decision": "allow", "scope": "once"}, {"decision": "deny", "scope": None}]
    (cancelled,) = payloads["ANNOTATION"]
    assert cancelled["annotation_type"] == "flag" and cancelled["content"]["flag"] == "turn_cancelled"
    (end,) = payloads["SESSION_END"]
    assert end["status"] == "success" and end["total_cost_usd"] == by_type(
        recording.events, "session.ended")[0].payload["total_cost_usd"]


def test_session_start_is_synthesised_when_session_created_was_pruned(recording: SessionRecording) -> None:
    created = by_type(recording.events, "session.created")[0]
    pruned = SessionRecording(recording.session, [e for e in recording.events if e is not created],
                              recording.messages)
    entries, _ = event_log_entries(pruned)
    start = entries[0]
    assert start["event_type"] == "SESSION_START" and start["source_event_id"] is None
    Draft202012Validator(ENTRY_SCHEMA, format_checker=FormatChecker()).validate(start)
    assert start["event_id"] == event_log_entries(pruned)[0][0]["event_id"]  # deterministic
    assert "policy_version" not in entries[1]["payload"]
