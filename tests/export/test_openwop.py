"""OpenWOP export: every RunEventDoc and payload validates, one run per turn, nodes, usage, causation."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from metis_core.events.envelope import Event
from metis_core.export import ExportOptions, SessionRecording, openwop_documents
from metis_core.export.otlp_json import trace_id_for_session

from .conftest import RecordedSession, by_type, openwop_schemas

RUN_CANCELLED_1_4_0 = {
    "type": "object",
    "properties": {
        "reason": {"type": "string"},
        "cancelledBy": {"type": "string"},
        "durationMs": {"type": "integer", "minimum": 0},
        "parentRunId": {"type": "string", "minLength": 1},
    },
    "additionalProperties": True,
}
"""runCancelled as the payloads 1.4.0 diff shows it (@@ -124,7 +236,8 @@); the subset file lacks it."""


def payload_validator(run_type: str) -> Draft202012Validator:
    _, payloads = openwop_schemas()
    index = payloads["$defs"]["_typeIndex"]["properties"]
    if run_type == "run.cancelled":
        return Draft202012Validator(RUN_CANCELLED_1_4_0)
    if run_type not in index:
        raise AssertionError(f"{run_type} has no payload contract in the vendored schemas")
    return Draft202012Validator({**index[run_type], "$defs": payloads["$defs"]}, format_checker=FormatChecker())


def runs(documents: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for document in documents:
        grouped.setdefault(document["runId"], []).append(document)
    return grouped


@pytest.mark.parametrize("include_content", [False, True])
def test_every_document_and_payload_validates_against_the_openwop_schemas(
    recording: SessionRecording, include_content: bool
) -> None:
    envelope, _ = openwop_schemas()
    envelope_validator = Draft202012Validator(envelope, format_checker=FormatChecker())
    documents, _ = openwop_documents(recording, ExportOptions(include_content=include_content))
    assert documents
    for document in documents:
        envelope_validator.validate(document)
        payload_validator(document["type"]).validate(document["payload"])
    assert {d["type"] for d in documents} == {
        "run.started", "agent.decided", "node.started", "node.completed", "node.failed", "provider.usage",
        "agent.toolCalled", "agent.toolReturned", "run.completed", "run.cancelled"}


def test_one_run_per_turn_with_sequences_counting_from_zero(
    recording: SessionRecording, recorded: RecordedSession
) -> None:
    documents, _ = openwop_documents(recording)
    grouped = runs(documents)
    assert list(grouped) == recorded.turn_ids
    for run_id, run in grouped.items():
        assert [d["sequence"] for d in run] == list(range(len(run)))
        assert run[0]["type"] == "run.started" and run[0]["payload"]["metadata"]["turnId"] == run_id
        assert run[-1]["type"] in {"run.completed", "run.cancelled"}
        assert [d["timestamp"] for d in run] == sorted(d["timestamp"] for d in run)
    assert [run[-1]["type"] for run in grouped.values()] == [
        "run.completed", "run.completed", "run.completed", "run.cancelled", "run.completed"]
    assert len({d["eventId"] for d in documents}) == len(documents)


def test_causation_ids_name_earlier_documents_of_the_same_run(recording: SessionRecording) -> None:
    documents, _ = openwop_documents(recording)
    for run in runs(documents).values():
        seen: set[str] = set()
        for document in run:
            if document["type"] != "run.started":
                assert document["causationId"] in seen, document
            seen.add(document["eventId"])


def test_a_fallback_is_one_node_retried_on_the_next_model(recording: SessionRecording) -> None:
    documents, _ = openwop_documents(recording)
    fallback = list(runs(documents).values())[2]
    nodes = [(d["type"], d["payload"].get("attempt", d["payload"].get("attempts")), d["payload"].get("model"))
             for d in fallback if d["type"].startswith("node.")]
    assert nodes == [
        ("node.started", 0, "anthropic:claude-haiku-4-5"), ("node.failed", 1, None),
        ("node.started", 1, "openai:gpt-4o"), ("node.failed", 2, None),
        ("node.started", 2, "gemini:gemini-2.5-flash"), ("node.completed", None, None)]
    assert {d["nodeId"] for d in fallback if d["type"].startswith("node.")} == {"llm-call-1"}
    errors = [d["payload"]["error"] for d in fallback if d["type"] == "node.failed"]
    assert [(e["code"], e["retryable"]) for e in errors] == [("server_error", True), ("rate_limit", True)]


def test_provider_usage_repeats_the_recorded_usage_and_names_the_otel_trace(recording: SessionRecording) -> None:
    documents, _ = openwop_documents(recording)
    usage = [d for d in documents if d["type"] == "provider.usage"]
    completed = by_type(recording.events, "llm.call_completed")
    assert len(usage) == len(completed) == 6
    for document, event in zip(usage, completed, strict=True):
        p = event.payload
        assert document["eventId"] == f"{event.id}-usage" and document["causationId"] == event.id
        assert document["payload"]["inputTokens"] == (
            p["input_tokens"] + p["cached_input_tokens"] + p["cache_creation_input_tokens"])
        assert document["payload"]["outputTokens"] == p["output_tokens"]
        assert document["payload"]["costEstimateUsd"] == p["cost_usd"]
        assert document["payload"]["model"] == p["model"].partition(":")[2]
        assert document["payload"]["traceId"] == trace_id_for_session(recording.session_id)


def test_tool_calls_pair_by_call_id_and_a_denial_returns_an_error(recording: SessionRecording) -> None:
    documents, _ = openwop_documents(recording)
    called = [d["payload"] for d in documents if d["type"] == "agent.toolCalled"]
    returned = [d["payload"] for d in documents if d["type"] == "agent.toolReturned"]
    assert [c["callId"] for c in called] == [r["callId"] for r in returned]
    assert returned[0]["outcome"] == {"success": True, "outputSizeBytes": 19, "latencyMs": returned[0]["outcome"]
                                      ["latencyMs"]}
    assert returned[1]["error"] == {"code": "user_denied", "message": "user_denied", "retryable": False}
    assert "outcome" not in returned[1]


def test_events_without_a_counterpart_are_skipped_and_counted(recording: SessionRecording) -> None:
    documents, summary = openwop_documents(recording)
    assert dict(summary.skipped) == {"session.created": 1, "session.ended": 1, "routing.provider_unavailable": 1,
                                     "tool.confirmation_requested": 2, "tool.confirmation_resolved": 2}
    assert summary.exported + summary.skipped_total == summary.events_read
    assert summary.documents == len(documents)


def replace_payload(recording: SessionRecording, event: Event, **changes: Any) -> SessionRecording:
    edited = event.model_copy(update={"payload": {**event.payload, **changes}})
    events = [edited if e.id == event.id else e for e in recording.events]
    return SessionRecording(recording.session, events, recording.messages)


def test_a_capability_rejection_in_routing_is_a_model_capability_substitution(recording: SessionRecording) -> None:
    route = by_type(recording.events, "route.decided")[0]
    chain = [dict(entry) for entry in route.payload["chain"]]
    chain[2] = {**chain[2], "verdict": "rejected", "candidate_model": "ollama:llama3",
                "validation_failure": "no_tool_support", "reason": "rule 'local' picked a model without tools"}
    documents, _ = openwop_documents(replace_payload(recording, route, chain=chain))
    (substituted,) = [d for d in documents if d["type"] == "model.capability.substituted"]
    payload_validator("model.capability.substituted").validate(substituted["payload"])
    assert substituted["payload"] == {
        "nodeId": "llm-call-1", "originalProvider": "ollama", "originalModel": "llama3",
        "fallbackProvider": "anthropic", "fallbackModel": "claude-haiku-4-5", "missingCapabilities": ["tools"]}
    assert substituted["eventId"] == f"{route.id}-substituted" and substituted["causationId"] == route.id


def test_a_turn_that_ended_with_an_error_is_a_failed_run_naming_the_failed_node(recording: SessionRecording) -> None:
    fallback_turn = recording.turns()[2]
    assert fallback_turn.ended is not None
    error = {"error": "every model in the chain failed"}
    failing = replace_payload(recording, fallback_turn.ended, signals_extra=error)
    documents, _ = openwop_documents(failing)
    last = runs(documents)[fallback_turn.turn_id][-1]
    assert last["type"] == "run.failed"
    payload_validator("run.failed").validate(last["payload"])
    assert last["payload"]["error"]["code"] == "rate_limit"
    assert last["payload"]["error"]["message"] == "every model in the chain failed"
    assert last["payload"]["failedNodeId"] == "llm-call-1"


def test_a_turn_whose_start_was_pruned_is_skipped_whole(recording: SessionRecording) -> None:
    first = recording.turns()[0]
    assert first.started is not None
    pruned = SessionRecording(recording.session, [e for e in recording.events if e.id != first.started.id],
                              recording.messages)
    documents, summary = openwop_documents(pruned)
    assert first.turn_id not in runs(documents)
    assert summary.skipped["llm.call_started"] == 2 and summary.skipped["turn.completed"] == 1
