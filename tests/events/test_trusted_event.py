"""The trusted construction (make_trusted_event, EventBus.emit_trusted) builds what make_event builds
from a payload whose values are already their dumped form, and strict mode refuses any difference."""

from __future__ import annotations

import logging
import pickle
from typing import Any

import orjson
import pytest
from event_payload_samples import MINIMAL_PAYLOADS
from pydantic import ValidationError

from metis_core.errors import EventValidationError
from metis_core.events.bus import BusMode, EventBus
from metis_core.events.catalog import CATALOG, make_event
from metis_core.events.envelope import Actor, Event, Sensitivity
from metis_core.events.payloads.llm import RequestOptions
from metis_core.events.recorder import EventRecorder
from metis_core.events.trusted_event import _PayloadPlan, check_trusted, make_trusted_event, trusted_payload

HASH = "ab" * 32
OPTIONS = {"max_tokens": 256, "temperature": None, "top_p": None, "stop": None, "reasoning_effort": None,
           "thinking_budget_tokens": None, "tool_choice": None, "parallel_tool_calls": None, "response_format": None,
           "hosted_tools": None, "tools": ["get_weather"], "output": None, "omitted": []}  # fmt: skip

GATEWAY_PAYLOADS: list[tuple[str, dict[str, Any]]] = [
    # as metis_core/gateway/call_record.py builds them, with the values each can take
    ("turn.started", {"user_message_hash": HASH, "user_message_text_redacted": None, "estimated_input_tokens": 12,
                      "has_images": False, "has_tool_calls_in_history": True}),
    ("turn.started", {"user_message_hash": HASH, "user_message_text_redacted": "hi", "estimated_input_tokens": 0,
                      "has_images": True, "has_tool_calls_in_history": False}),
    ("llm.call_started", {"model": "anthropic:claude-haiku-4-5", "provider": "anthropic", "estimated_input_tokens": 7,
                          "request_id": "01KAZ0000000000000000000AB", "is_worker": False, "request_options": OPTIONS}),
    ("llm.call_started", {"model": "openai:gpt-4o", "provider": "openai", "estimated_input_tokens": 0,
                          "request_id": "01KAZ0000000000000000000AC", "is_worker": False,
                          "request_options": {**OPTIONS, "tools": None, "omitted": ["extra"]}}),
    ("llm.call_completed", {"model": "anthropic:claude-haiku-4-5", "provider": "anthropic", "input_tokens": 10,
                            "output_tokens": 20, "cached_input_tokens": 0, "cache_creation_input_tokens": 3,
                            "cost_usd": 0.000125, "pricing_version": "2025-06", "latency_ms": 41,
                            "stop_reason": "tool_use", "produced_tool_calls": 1, "produced_thinking_blocks": 0,
                            "gateway_key_id": "gk_01KAZ", "inbound_shape": "anthropic", "user_id": "usr_1",
                            "team_id": None}),
    ("llm.call_completed", {"model": "openai:gpt-4o", "provider": "openai", "input_tokens": 0, "output_tokens": 0,
                            "cached_input_tokens": 0, "cache_creation_input_tokens": 0, "cost_usd": 0,
                            "pricing_version": "unpriced", "latency_ms": 0, "stop_reason": "end_turn",
                            "produced_tool_calls": 0, "produced_thinking_blocks": 0, "gateway_key_id": "gk_2",
                            "inbound_shape": "openai", "user_id": None, "team_id": "team_1"}),
    ("turn.completed", {"stop_reason": "end_turn", "llm_call_count": 1, "tool_call_count": 0, "total_input_tokens": 10,
                        "total_output_tokens": 20, "total_cost_usd": 0.000125, "wall_time_seconds": 0.012,
                        "signals_extra": None, "user_id": None, "team_id": None}),
    ("turn.completed", {"stop_reason": "error", "llm_call_count": 2, "tool_call_count": 0, "total_input_tokens": 0,
                        "total_output_tokens": 0, "total_cost_usd": 0.0, "wall_time_seconds": 3,
                        "signals_extra": {"error": "ProviderError"}, "user_id": "usr_1", "team_id": "team_1"}),
]  # fmt: skip


def _same(trusted: Event, validated: Event) -> None:
    assert list(trusted.payload.items()) == list(validated.payload.items())
    assert orjson.dumps(trusted.payload) == orjson.dumps(validated.payload)
    assert (trusted.type, trusted.actor, trusted.sensitivity) == (validated.type, validated.actor,
                                                                  validated.sensitivity)


@pytest.mark.parametrize(("event_type", "payload"), GATEWAY_PAYLOADS)
def test_the_gateway_events_built_trusted_equal_the_validated_ones(event_type: str, payload: dict[str, Any]) -> None:
    scope: dict[str, Any] = {"session_id": "sess_1", "turn_id": "turn_1", "parent": "01KAZ0000000000000000000AA"}
    trusted = make_trusted_event(event_type, payload, **scope)
    validated = make_event(event_type, payload, **scope)
    _same(trusted, validated)
    assert (trusted.session_id, trusted.turn_id, trusted.parent_event_id) == ("sess_1", "turn_1", scope["parent"])


def test_a_payload_left_short_of_its_defaults_is_filled_in_the_models_order() -> None:
    payload = {"team_id": "team_1", "stop_reason": "end_turn", "llm_call_count": 1, "tool_call_count": 0,
               "total_input_tokens": 1, "total_output_tokens": 2, "total_cost_usd": 0, "wall_time_seconds": 1}
    trusted = make_trusted_event("turn.completed", payload, session_id="s")
    _same(trusted, make_event("turn.completed", payload, session_id="s"))
    assert list(trusted.payload)[-3:] == ["signals_extra", "user_id", "team_id"]
    assert trusted.payload["total_cost_usd"] == 0.0 and type(trusted.payload["total_cost_usd"]) is float


@pytest.mark.parametrize("event_type", sorted(CATALOG))
def test_every_catalog_payload_in_its_dumped_form_is_built_unchanged(event_type: str) -> None:
    validated = make_event(event_type, MINIMAL_PAYLOADS[event_type], session_id="s")
    assert trusted_payload(event_type, validated.payload) == validated.payload
    _same(make_trusted_event(event_type, validated.payload, session_id="s"), validated)


def test_a_default_made_by_a_factory_is_made_afresh_for_each_payload() -> None:
    plan = _PayloadPlan.of(RequestOptions)
    first, second = plan.build({"max_tokens": 5}, "request_options"), plan.build({}, "request_options")
    assert first == RequestOptions(max_tokens=5).model_dump(mode="json")
    assert first["omitted"] == second["omitted"] == [] and first["omitted"] is not second["omitted"]


def test_an_unknown_field_or_a_missing_required_one_is_refused() -> None:
    payload = dict(GATEWAY_PAYLOADS[6][1])
    with pytest.raises(EventValidationError, match="costs: not a field"):
        make_trusted_event("turn.completed", {**payload, "costs": 1}, session_id="s")
    del payload["llm_call_count"]
    with pytest.raises(EventValidationError, match="llm_call_count: Field required"):
        make_trusted_event("turn.completed", payload, session_id="s")
    with pytest.raises(EventValidationError, match="not a catalog event type"):
        make_trusted_event("turn.exploded", {}, session_id="s")


def test_check_trusted_names_a_value_the_validated_path_would_change_or_refuse() -> None:
    event = make_trusted_event("turn.completed", {**GATEWAY_PAYLOADS[6][1], "signals_extra": {"steps": (1, 2)}},
                               session_id="s")
    with pytest.raises(EventValidationError, match="trusted construction gave"):
        check_trusted(event, {**GATEWAY_PAYLOADS[6][1], "signals_extra": {"steps": (1, 2)}})
    bad = {**GATEWAY_PAYLOADS[6][1], "llm_call_count": -1}
    with pytest.raises(EventValidationError, match="llm_call_count"):
        check_trusted(make_trusted_event("turn.completed", bad, session_id="s"), bad)


def test_a_strict_bus_refuses_a_trusted_event_that_differs_and_delivers_the_rest() -> None:
    recorder = EventRecorder()
    with EventBus(mode=BusMode.STRICT) as bus:
        bus.subscribe(recorder.subscription())
        sent = bus.emit_trusted("turn.started", GATEWAY_PAYLOADS[0][1], session_id="sess_1", actor=Actor.USER)
        with pytest.raises(EventValidationError):
            bus.emit_trusted("turn.started", {**GATEWAY_PAYLOADS[0][1], "estimated_input_tokens": -5},
                             session_id="sess_1")
        bus.flush()
    assert [e.id for e in recorder.of_type("turn.started")] == [sent.id]
    assert sent.sensitivity is Sensitivity.PRIVATE


def test_a_lenient_bus_emits_trusted_events_without_validating_them(caplog: pytest.LogCaptureFixture) -> None:
    recorder = EventRecorder()
    with EventBus(mode=BusMode.LENIENT) as bus:
        bus.subscribe(recorder.subscription())
        caplog.set_level(logging.WARNING)
        sent = bus.emit_trusted("turn.started", GATEWAY_PAYLOADS[1][1], session_id="sess_1")
        bus.flush()
    assert recorder.of_type("turn.started") == [sent]
    assert sent.sensitivity is Sensitivity.USER_CONTROLLED  # the type's rule, as make_event applies it
    assert sent.actor is Actor.USER


def test_an_event_built_without_validation_is_the_event_the_constructor_validates() -> None:
    values: dict[str, Any] = {"session_id": "sess_1", "turn_id": "turn_1", "parent_event_id": None,
                              "type": "turn.completed", "actor": Actor.AGENT, "payload": dict(GATEWAY_PAYLOADS[6][1]),
                              "sensitivity": Sensitivity.PSEUDONYMOUS}  # fmt: skip
    built = Event.built(**values)
    validated = Event(id=built.id, timestamp=built.timestamp, **values)
    assert built == validated
    assert built.model_dump() == validated.model_dump()
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_fields_set == Event(**values).model_fields_set
    assert built.timestamp.tzinfo is not None and built.timestamp_us == validated.timestamp_us
    assert pickle.loads(pickle.dumps(built)) == built and built.model_copy() == built
    with pytest.raises(ValidationError):
        built.type = "turn.started"  # type: ignore[misc]  # frozen, as every event
    later = Event.built(**values)
    assert later.id > built.id and later.timestamp >= built.timestamp
