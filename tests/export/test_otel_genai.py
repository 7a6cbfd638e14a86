"""OTel GenAI export: span tree, timing from event timestamps, attributes, links, OTLP/JSON shape."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from ulid import ULID

from metis_core.export import ExportOptions, SessionRecording, otel_trace_request
from metis_core.export.otlp_json import span_id_for_event

from .conftest import USER_TEXTS, RecordedSession, by_type

HEX = {"type": "string", "pattern": "^[0-9a-f]+$"}
NANOS = {"type": "string", "pattern": "^[0-9]+$"}
ANY_VALUE = {"type": "object", "minProperties": 1, "maxProperties": 1, "properties": {
    "stringValue": {"type": "string"}, "boolValue": {"type": "boolean"},
    "intValue": {"type": "string", "pattern": "^-?[0-9]+$"}, "doubleValue": {"type": "number"},
    "arrayValue": {"type": "object", "required": ["values"]}}, "additionalProperties": False}
KEY_VALUES = {"type": "array", "items": {"type": "object", "required": ["key", "value"], "additionalProperties": False,
                                        "properties": {"key": {"type": "string"}, "value": ANY_VALUE}}}
OTLP_SPAN = {
    "type": "object", "additionalProperties": False,
    "required": ["traceId", "spanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano", "attributes", "status"],
    "properties": {
        "traceId": {**HEX, "minLength": 32, "maxLength": 32}, "spanId": {**HEX, "minLength": 16, "maxLength": 16},
        "parentSpanId": {**HEX, "minLength": 16, "maxLength": 16}, "name": {"type": "string", "minLength": 1},
        "kind": {"enum": [1, 2, 3, 4, 5]}, "startTimeUnixNano": NANOS, "endTimeUnixNano": NANOS,
        "attributes": KEY_VALUES,
        "events": {"type": "array", "items": {"type": "object", "required": ["timeUnixNano", "name"],
                                              "properties": {"timeUnixNano": NANOS, "attributes": KEY_VALUES}}},
        "links": {"type": "array", "items": {"type": "object", "required": ["traceId", "spanId"],
                                             "properties": {"attributes": KEY_VALUES}}},
        "status": {"type": "object", "properties": {"code": {"enum": [0, 1, 2]}, "message": {"type": "string"}},
                   "additionalProperties": False},
    },
}
"""The OTLP/JSON encoding rules a collector's JSON decoder relies on (hex ids, string nanos and int64s)."""


def spans_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    (resource,) = request["resourceSpans"]
    (scope,) = resource["scopeSpans"]
    return list(scope["spans"])


def attrs(item: dict[str, Any]) -> dict[str, Any]:
    def plain(value: dict[str, Any]) -> Any:
        ((kind, inner),) = value.items()
        if kind == "intValue":
            return int(inner)
        if kind == "arrayValue":
            return [plain(v) for v in inner["values"]]
        return inner
    return {a["key"]: plain(a["value"]) for a in item.get("attributes", [])}


def turn_tree(spans: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    roots = [s for s in spans if "parentSpanId" not in s]
    return [(root, [s for s in spans if s.get("parentSpanId") == root["spanId"]]) for root in roots]


def test_every_span_is_valid_otlp_json_in_one_trace_named_after_the_session(recording: SessionRecording) -> None:
    request, _ = otel_trace_request(recording)
    spans = spans_of(request)
    for span in spans:
        jsonschema.validate(span, OTLP_SPAN)
    session_ulid = ULID.from_str(recording.session_id.removeprefix("sess_"))
    assert {s["traceId"] for s in spans} == {session_ulid.bytes.hex()}
    assert len({s["spanId"] for s in spans}) == len(spans)
    resource = attrs(request["resourceSpans"][0]["resource"])
    assert resource["service.name"] == "metis"
    assert request["resourceSpans"][0]["scopeSpans"][0]["schemaUrl"].endswith("/1.37.0")


def test_each_turn_is_an_invoke_agent_root_with_its_calls_and_tools_as_children(
    recording: SessionRecording, recorded: RecordedSession
) -> None:
    tree = turn_tree(spans_of(otel_trace_request(recording)[0]))
    assert [attrs(root)["metis.turn.id"] for root, _ in tree] == recorded.turn_ids
    assert all(root["name"] == "invoke_agent metis" and root["kind"] == 1 for root, _ in tree)
    assert [[child["name"] for child in children] for _, children in tree] == [
        ["chat claude-haiku-4-5", "execute_tool get_weather", "chat claude-haiku-4-5"],
        ["chat claude-haiku-4-5", "execute_tool get_weather", "chat claude-haiku-4-5"],
        ["chat claude-haiku-4-5", "chat gpt-4o", "chat gemini-2.5-flash"],
        ["chat claude-haiku-4-5"],
        ["chat claude-haiku-4-5"],
    ]
    for root, children in tree:
        assert attrs(root)["gen_ai.conversation.id"] == recording.session_id
        for child in children:
            assert child["kind"] == (3 if child["name"].startswith("chat") else 1)


def test_span_times_are_the_event_timestamps_and_children_stay_inside_their_turn(recording: SessionRecording) -> None:
    spans = {s["spanId"]: s for s in spans_of(otel_trace_request(recording)[0])}
    events = recording.events
    for opening, closing_types in (("turn.started", {"turn.completed", "turn.cancelled"}),
                                   ("llm.call_started", {"llm.call_completed", "llm.call_failed"}),
                                   ("tool.called", {"tool.completed", "tool.failed"})):
        for event in by_type(events, opening):
            span = spans[span_id_for_event(event.id)]
            assert int(span["startTimeUnixNano"]) == event.timestamp_us * 1000
            closing = [e for e in events if e.parent_event_id == event.id and e.type in closing_types]
            if closing:
                assert int(span["endTimeUnixNano"]) == closing[0].timestamp_us * 1000
    for span in spans.values():
        assert int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"])
        if "parentSpanId" in span:
            parent = spans[span["parentSpanId"]]
            assert int(parent["startTimeUnixNano"]) <= int(span["startTimeUnixNano"])
            assert int(span["endTimeUnixNano"]) <= int(parent["endTimeUnixNano"])
        for event in span.get("events", []):
            assert int(span["startTimeUnixNano"]) <= int(event["timeUnixNano"]) <= int(span["endTimeUnixNano"])


def test_chat_spans_carry_genai_usage_response_and_cost_from_the_recording(recording: SessionRecording) -> None:
    spans = {s["spanId"]: s for s in spans_of(otel_trace_request(recording)[0])}
    first_call = by_type(recording.events, "llm.call_started")[0]
    completed = by_type(recording.events, "llm.call_completed")[0]
    chat = attrs(spans[span_id_for_event(first_call.id)])
    assert chat["gen_ai.operation.name"] == "chat" and chat["gen_ai.provider.name"] == "anthropic"
    assert chat["gen_ai.request.model"] == "claude-haiku-4-5"
    assert chat["gen_ai.response.id"] == "msg_019Q1hrJbZG26Fb9BQhrkHEr"  # from the recorded stream
    assert chat["gen_ai.response.model"] == "claude-sonnet-4-20250514"
    assert chat["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert chat["gen_ai.usage.input_tokens"] == 377 and chat["gen_ai.usage.output_tokens"] == 65
    assert chat["metis.cost_usd"] == completed.payload["cost_usd"]
    assert chat["metis.pricing_version"] == completed.payload["pricing_version"] != "unpriced"
    gemini = next(attrs(s) for s in spans.values() if s["name"] == "chat gemini-2.5-flash")
    assert gemini["gen_ai.provider.name"] == "gcp.gemini" and gemini["gen_ai.response.id"] == "w1peaMz6INOvnvgPgYfPiQY"
    assert "gen_ai.system" not in gemini
    turn = attrs(spans[span_id_for_event(by_type(recording.events, "turn.started")[0].id)])
    assert turn["gen_ai.usage.input_tokens"] == 388 and turn["metis.cost_usd"] == 0.000743


def test_legacy_system_attribute_is_written_only_when_asked(recording: SessionRecording) -> None:
    spans = spans_of(otel_trace_request(recording, ExportOptions(legacy_system_attribute=True))[0])
    gemini = next(attrs(s) for s in spans if s["name"] == "chat gemini-2.5-flash")
    assert gemini["gen_ai.system"] == "gemini" and gemini["gen_ai.provider.name"] == "gcp.gemini"


def test_fallback_attempts_are_error_spans_linked_to_the_failure_that_caused_the_next(
    recording: SessionRecording,
) -> None:
    tree = turn_tree(spans_of(otel_trace_request(recording)[0]))
    anthropic, openai, gemini = tree[2][1]
    assert anthropic["status"]["code"] == 2 and attrs(anthropic)["error.type"] == "server_error"
    assert "529 overloaded_error" in anthropic["status"]["message"]
    assert openai["status"]["code"] == 2 and attrs(openai)["error.type"] == "rate_limit"
    assert gemini["status"] == {"code": 0}
    assert [link["spanId"] for link in openai["links"]] == [anthropic["spanId"]]
    assert attrs(openai["links"][0])["metis.cause.event_type"] == "llm.call_failed"
    assert [link["spanId"] for link in gemini["links"]] == [openai["spanId"]]
    assert tree[2][0]["status"] == {"code": 0}  # the turn still answered
    assert "metis.routing.provider_unavailable" in [e["name"] for e in tree[2][0]["events"]]


def test_tool_spans_link_to_the_chat_that_asked_and_record_the_confirmation(recording: SessionRecording) -> None:
    tree = turn_tree(spans_of(otel_trace_request(recording)[0]))
    for (_, (chat, tool, next_chat)), decision in zip(tree[:2], ("allow", "deny"), strict=True):
        tool_attrs = attrs(tool)
        assert tool_attrs["gen_ai.tool.name"] == "get_weather" and tool_attrs["gen_ai.tool.call.id"].startswith("tu_")
        assert [link["spanId"] for link in tool["links"]] == [chat["spanId"]]
        assert [link["spanId"] for link in next_chat["links"]] == [tool["spanId"]]
        resolved = [e for e in tool["events"] if e["name"] == "metis.tool.confirmation_resolved"]
        assert attrs(resolved[0])["metis.decision"] == decision
    denied = tree[1][1][1]
    assert denied["status"] == {"code": 2, "message": "tool call failed (user_denied)"}
    assert attrs(denied)["error.type"] == "user_denied"


def test_a_cancelled_turn_ends_its_open_chat_span_at_the_cancellation(recording: SessionRecording) -> None:
    root, (chat,) = turn_tree(spans_of(otel_trace_request(recording)[0]))[3]
    cancelled = by_type(recording.events, "turn.cancelled")[0]
    assert int(root["endTimeUnixNano"]) == int(chat["endTimeUnixNano"]) == cancelled.timestamp_us * 1000
    assert attrs(root)["error.type"] == "cancelled" and attrs(chat)["error.type"] == "cancelled"
    assert root["status"]["message"] == "turn cancelled (user_cancel)"
    assert "metis.span.incomplete" not in attrs(chat)


def test_a_turn_cut_short_in_the_trace_is_ended_at_its_last_event_and_marked_incomplete(
    recording: SessionRecording,
) -> None:
    last_turn = recording.turns()[-1]
    assert last_turn.ended is not None
    kept = [e for e in recording.events if (e.id != last_turn.ended.id and e.type != "llm.call_completed")
            or e.turn_id != last_turn.turn_id]
    cut = SessionRecording(recording.session, kept, recording.messages)
    root, (chat,) = turn_tree(spans_of(otel_trace_request(cut)[0]))[4]
    last_seen = max(e.timestamp_us for e in kept if e.turn_id == last_turn.turn_id)
    assert int(root["endTimeUnixNano"]) == int(chat["endTimeUnixNano"]) == last_seen * 1000
    assert attrs(root)["metis.span.incomplete"] is True and attrs(chat)["metis.span.incomplete"] is True
    assert root["status"] == {"code": 0}


def test_session_level_events_are_skipped_and_counted(recording: SessionRecording) -> None:
    request, summary = otel_trace_request(recording)
    assert dict(summary.skipped) == {"session.created": 1, "session.ended": 1}
    assert summary.exported + summary.skipped_total == summary.events_read == len(recording.events)
    assert summary.documents == len(spans_of(request)) == 16


def test_the_same_session_exports_to_the_same_bytes(recording: SessionRecording) -> None:
    first, _ = otel_trace_request(recording)
    second, _ = otel_trace_request(recording)
    assert json.dumps(first) == json.dumps(second)


def test_include_content_adds_inference_details_and_tool_arguments_from_the_store(
    recording: SessionRecording,
) -> None:
    tree = turn_tree(spans_of(otel_trace_request(recording, ExportOptions(include_content=True))[0]))
    chat, tool, _ = tree[0][1]
    (details,) = [e for e in chat["events"] if e["name"] == "gen_ai.client.inference.operation.details"]
    inputs = json.loads(attrs(details)["gen_ai.input.messages"])
    outputs = json.loads(attrs(details)["gen_ai.output.messages"])
    assert inputs == [{"role": "user", "parts": [{"type": "text", "content": USER_TEXTS[0]}]}]
    (answer,) = outputs
    assert answer["role"] == "assistant" and answer["finish_reason"] == "tool_calls"
    (call,) = [p for p in answer["parts"] if p["type"] == "tool_call"]
    assert call["name"] == "get_weather" and call["arguments"] == {"location": "Paris"}
    assert attrs(tool)["gen_ai.tool.call.arguments"] == '{"location":"Paris"}'
    assert attrs(tool)["gen_ai.tool.call.result"] == "Paris: 73°F, clear"


def test_chat_spans_carry_the_request_settings_the_call_recorded(recording: SessionRecording) -> None:
    spans = {s["spanId"]: s for s in spans_of(otel_trace_request(recording)[0])}
    started = by_type(recording.events, "llm.call_started")
    asked = [e.payload.get("request_options") for e in started]
    assert all(isinstance(a, dict) for a in asked)  # the recording's calls were made by today's agent
    for event, options in zip(started, asked, strict=True):
        chat = attrs(spans[span_id_for_event(event.id)])
        assert chat.get("gen_ai.request.max_tokens") == options["max_tokens"]
        assert chat.get("gen_ai.request.temperature") == options["temperature"]
    # one call asked with settings, one record from before request_options existed
    rich = started[0].model_copy(update={"payload": {**started[0].payload, "request_options": {
        "max_tokens": 300, "temperature": 0.2, "top_p": 0.9, "stop": ["END"], "response_format": {"type": "json"},
        "omitted": []}}})
    old = started[-1].model_copy(update={"payload": {k: v for k, v in started[-1].payload.items()
                                                      if k != "request_options"}})
    events = [rich if e.id == rich.id else old if e.id == old.id else e for e in recording.events]
    spans = {s["spanId"]: s for s in spans_of(otel_trace_request(SessionRecording(recording.session, events,
                                                                                recording.messages))[0])}
    chat = attrs(spans[span_id_for_event(rich.id)])
    assert (chat["gen_ai.request.max_tokens"], chat["gen_ai.request.temperature"], chat["gen_ai.request.top_p"],
            chat["gen_ai.request.stop_sequences"], chat["gen_ai.output.type"]) == (300, 0.2, 0.9, ["END"], "json")
    assert not any(k.startswith("gen_ai.request.") and k != "gen_ai.request.model"
                   for k in attrs(spans[span_id_for_event(old.id)]))
