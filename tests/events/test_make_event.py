"""make_event validates strictly, normalises the payload to its JSON form and fills the envelope."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import orjson
import pytest
from event_payload_samples import MINIMAL_PAYLOADS, minimal

from metis_core.errors import EventValidationError
from metis_core.events.catalog import CATALOG, make_event, validate_event
from metis_core.events.envelope import Actor, Event, Sensitivity
from metis_core.events.payloads.turn import TurnStartedPayload


def test_every_catalog_type_builds_from_its_minimal_payload() -> None:
    assert set(MINIMAL_PAYLOADS) == set(CATALOG)
    for event_type, payload in MINIMAL_PAYLOADS.items():
        event = make_event(event_type, payload, session_id="sess_1")
        validate_event(event)
        assert event.actor == CATALOG[event_type].default_actor


def test_payload_is_stored_as_plain_json_with_nullable_fields_filled() -> None:
    event = make_event("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id="s")
    assert event.payload["user_message_text_redacted"] is None
    assert orjson.loads(orjson.dumps(event.payload)) == event.payload
    assert orjson.loads(event.model_dump_json())["payload"] == event.payload


def test_a_payload_model_instance_is_accepted() -> None:
    model = TurnStartedPayload.model_validate(MINIMAL_PAYLOADS["turn.started"])
    event = make_event("turn.started", model, session_id="s")
    assert event.payload["user_message_hash"] == model.user_message_hash


def test_a_payload_model_of_another_type_is_rejected() -> None:
    model = TurnStartedPayload.model_validate(MINIMAL_PAYLOADS["turn.started"])
    with pytest.raises(EventValidationError, match="TurnCompletedPayload"):
        make_event("turn.completed", model, session_id="s")


def test_unknown_event_type_is_rejected() -> None:
    with pytest.raises(EventValidationError, match="not a catalog event type"):
        make_event("turn.exploded", {}, session_id="s")


def test_missing_required_field_is_rejected_with_its_name() -> None:
    payload = dict(MINIMAL_PAYLOADS["turn.started"])
    del payload["has_images"]
    with pytest.raises(EventValidationError, match="has_images"):
        make_event("turn.started", payload, session_id="s")


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(EventValidationError, match="user_message_text"):
        make_event("turn.started", minimal("turn.started", user_message_text="raw"), session_id="s")


@pytest.mark.parametrize(
    ("event_type", "field", "bad"),
    [
        ("turn.started", "estimated_input_tokens", "12"),  # no str -> int coercion
        ("turn.started", "has_images", 1),  # no int -> bool coercion
        ("llm.call_completed", "cost_usd", "0.1"),
        ("llm.call_completed", "stop_reason", "finished"),  # outside the Literal
        ("llm.call_failed", "error_class", "teapot"),
        ("tool.called", "side_effects", "delete"),
        ("session.ended", "turn_count", -1),
        ("eval.completed", "score", 1.5),
        ("pattern.recorded", "cost_usd_at_record", 0.0123),  # Decimal amounts are strings
        ("pattern.recorded", "cost_usd_at_record", "1e-3"),
        ("gateway.auth_failed", "token_hash_prefix", "ABCDEF0123"),
        ("route.decided", "chain", []),
    ],
)
def test_wrong_field_types_and_values_are_rejected(event_type: str, field: str, bad: object) -> None:
    with pytest.raises(EventValidationError, match=field):
        make_event(event_type, minimal(event_type, **{field: bad}), session_id="s")


def test_nested_route_chain_entries_are_validated_strictly() -> None:
    chain = [{"policy": "rule", "verdict": "chose", "reason": "r", "surprise": 1}]
    with pytest.raises(EventValidationError, match="surprise"):
        make_event("route.decided", minimal("route.decided", chain=chain), session_id="s")


def test_naive_datetimes_are_rejected() -> None:
    with pytest.raises(EventValidationError, match="expires_at"):
        make_event(
            "tool.confirmation_requested",
            minimal("tool.confirmation_requested", expires_at=datetime(2026, 5, 14, 10, 0)),
            session_id="s",
        )


def test_datetimes_are_stored_as_utc_with_microseconds() -> None:
    local = datetime(2026, 5, 14, 12, 0, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    event = make_event("trace.swept", minimal("trace.swept", cutoff_timestamp=local), session_id="system")
    assert event.payload["cutoff_timestamp"] == "2026-05-14T10:00:00.000005Z"


def test_decimal_amounts_become_plain_strings() -> None:
    event = make_event(
        "delegate.completed",
        minimal("delegate.completed", worker_total_cost_usd=Decimal("0.00000012")),
        session_id="s",
    )
    assert event.payload["worker_total_cost_usd"] == "0.00000012"


def test_non_json_values_are_rejected() -> None:
    with pytest.raises(EventValidationError, match="not plain JSON"):
        make_event("feedback.implicit", minimal("feedback.implicit", context={"x": object()}), session_id="s")


def test_parent_may_be_an_event_or_an_id_and_actor_and_turn_are_kept() -> None:
    root = make_event("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id="s", turn_id="t1")
    by_event = make_event("route.decided", MINIMAL_PAYLOADS["route.decided"], session_id="s", turn_id="t1", parent=root)
    by_id = make_event(
        "turn.cancelled", MINIMAL_PAYLOADS["turn.cancelled"], session_id="s", parent=root.id, actor=Actor.SYSTEM
    )
    assert by_event.parent_event_id == root.id and by_event.turn_id == "t1"
    assert by_id.parent_event_id == root.id and by_id.actor is Actor.SYSTEM
    assert by_event.id > root.id


def test_event_timestamp_is_utc() -> None:
    event = make_event("turn.started", MINIMAL_PAYLOADS["turn.started"], session_id="s")
    assert event.timestamp.tzinfo == UTC
    assert abs(event.timestamp - datetime.now(UTC)) < timedelta(seconds=5)


def test_validate_event_rejects_a_hand_built_event_with_a_bad_payload() -> None:
    event = Event(session_id="s", type="turn.started", actor=Actor.USER, payload={"user_message_hash": 1})
    with pytest.raises(EventValidationError):
        validate_event(event)


def test_validate_event_rejects_a_decimal_object_left_in_a_stored_payload() -> None:
    payload = minimal("delegate.failed", worker_total_cost_usd=Decimal("1"))
    event = Event(
        session_id="s",
        type="delegate.failed",
        actor=Actor.SYSTEM,
        payload=payload,
        sensitivity=Sensitivity.PSEUDONYMOUS,
    )
    with pytest.raises(EventValidationError, match="not plain JSON"):
        validate_event(event)
