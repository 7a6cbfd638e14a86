"""Recorded sensitivity (spec §4.4.1): the floor by default, less private when opt-in fields are
populated, and never more private than the floor, whoever asks."""

from __future__ import annotations

import pytest
from event_payload_samples import DEFAULT_RECORDING, MINIMAL_PAYLOADS, OPT_IN_PAYLOADS, minimal

from metis_core.errors import EventValidationError
from metis_core.events.catalog import CATALOG, make_event, validate_event
from metis_core.events.envelope import Actor, Event, Sensitivity


@pytest.mark.parametrize("event_type", sorted(CATALOG))
def test_default_fields_are_recorded_at_the_catalog_default(event_type: str) -> None:
    event = make_event(event_type, MINIMAL_PAYLOADS[event_type], session_id="s")
    expected = DEFAULT_RECORDING.get(event_type, CATALOG[event_type].floor)
    assert event.sensitivity is expected


@pytest.mark.parametrize("event_type", sorted(OPT_IN_PAYLOADS))
def test_opt_in_fields_move_the_recording_per_the_rule(event_type: str) -> None:
    payload, expected = OPT_IN_PAYLOADS[event_type]
    assert make_event(event_type, payload, session_id="s").sensitivity is expected


def test_only_the_types_with_opt_in_fields_have_a_sensitivity_rule() -> None:
    assert {t for t, spec in CATALOG.items() if spec.sensitivity_rule} == set(OPT_IN_PAYLOADS)


def test_opt_in_recordings_are_never_more_private_than_the_floor() -> None:
    for event_type, (payload, _) in OPT_IN_PAYLOADS.items():
        recorded = make_event(event_type, payload, session_id="s").sensitivity
        assert recorded.rank >= CATALOG[event_type].floor.rank


def test_eval_completed_with_a_null_rationale_counts_as_absent() -> None:
    payload = minimal("eval.completed", signals={"rationale_redacted": None})
    assert make_event("eval.completed", payload, session_id="s").sensitivity is Sensitivity.PSEUDONYMOUS


@pytest.mark.parametrize("event_type", sorted(CATALOG))
def test_override_more_private_than_the_floor_is_rejected(event_type: str) -> None:
    floor = CATALOG[event_type].floor
    for candidate in Sensitivity:
        if candidate.rank < floor.rank:
            with pytest.raises(EventValidationError, match="more private than the catalog floor"):
                make_event(event_type, MINIMAL_PAYLOADS[event_type], session_id="s", sensitivity=candidate)


@pytest.mark.parametrize("event_type", sorted(CATALOG))
def test_override_at_or_less_private_than_the_floor_is_recorded(event_type: str) -> None:
    floor = CATALOG[event_type].floor
    for candidate in Sensitivity:
        if candidate.rank >= floor.rank:
            event = make_event(event_type, MINIMAL_PAYLOADS[event_type], session_id="s", sensitivity=candidate)
            assert event.sensitivity is candidate


def test_eval_completed_override_to_private_is_rejected() -> None:
    payload, _ = OPT_IN_PAYLOADS["eval.completed"]
    with pytest.raises(EventValidationError, match="user_controlled"):
        make_event("eval.completed", payload, session_id="s", sensitivity=Sensitivity.PRIVATE)


def test_validate_event_rejects_a_hand_built_event_more_private_than_its_floor() -> None:
    event = Event(
        session_id="s",
        type="session.ended",
        actor=Actor.SYSTEM,
        payload=MINIMAL_PAYLOADS["session.ended"],
        sensitivity=Sensitivity.PRIVATE,
    )
    with pytest.raises(EventValidationError, match="floor"):
        validate_event(event)
