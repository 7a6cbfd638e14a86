"""The catalog is closed and matches the spec: exactly its types, audit set, domains, prefixes."""

from __future__ import annotations

import re
import typing

import pytest
from conftest import fixtures_root

from metis_core.errors import ErrorClass, EventValidationError
from metis_core.events.catalog import AUDIT_EVENT_TYPES, CATALOG, PAYLOAD_REGISTRY, build_catalog
from metis_core.events.envelope import Actor, Sensitivity
from metis_core.events.event_spec import CATALOG_DOMAINS, RESERVED_STREAMING_PREFIXES, EventSpec
from metis_core.events.payloads.fields import PayloadModel
from metis_core.events.payloads.llm import LlmCallCompletedPayload, LlmCallFailedPayload
from metis_core.events.payloads.turn import TurnCompletedPayload, TurnStartedPayload
from metis_core.messages import StopReason

SPEC_PATH = fixtures_root().parent / "specs" / "event-bus-and-trace-catalog.md"
OUTPUT_STEPS = {"llm.output_retried", "llm.output_exhausted", "llm.output_refused", "llm.output_truncated",
                "llm.output_nl_to_format", "llm.output_recovered"}
DESIGNED_HERE = {"gateway.quota_exceeded", "quota.alert", "turn.replay_diverged", "routing.constraint_failure",
                 "llm.prompt_composed", "memory.compacted", *OUTPUT_STEPS}
"""Not catalogued by the spec, payloads designed in this repo: the two in §7.3's audit set; turn.replay_diverged
for `metis replay`, a feature the spec predates (docs/record-replay.md); canonical-message-format §8.4's
`routing_constraint_failure` (a refused model swap); and `llm.prompt_composed` (what a request's system prompt
was assembled from, exported as OpenWOP RFC 0027 `prompt.composed`); the llm.output_* structured-output steps
(docs/structured-output.md, exported as OpenWOP RFC 0032 `envelope.*`); `memory.compacted`, a conversation's
context made smaller for the model (docs/context.md)."""
ADDED_HERE = {"session.deleted", "analytics.user_exported", "analytics.user_forgotten"}
"""Audit types this repo added beyond the spec's catalog headings: `metis sessions delete` (docs/cli.md),
and the two analytics types §7.3 names as audit-flagged without a payload (`metis users`, docs/users.md)."""

SPEC_AUDIT_SET = {
    "gateway.key_issued",
    "gateway.key_revoked",
    "gateway.key_rotated",
    "gateway.quota_exceeded",
    "gateway.auth_failed",
    "quota.alert",
    "routing.policy_invalid",
    "memory.eviction",
    "pattern.evicted",
    "tool.confirmation_resolved",
}


def _spec_catalog_entries() -> dict[str, str]:
    """Type -> declared floor, from every `<domain>.<name>Sensitivity: <floor>` heading."""
    text = SPEC_PATH.read_text(encoding="utf-8")
    found = re.findall(r"^([a-z_]+\.[a-z_]+)Sensitivity:\s*\n?\s*([a-z_]+)", text, flags=re.MULTILINE)
    return dict(found)


def test_catalog_has_exactly_the_spec_types_plus_the_types_designed_here() -> None:
    spec_types = set(_spec_catalog_entries())
    assert len(spec_types) == 47, "the spec parse found a different number of catalog headings"
    assert set(CATALOG) == spec_types | DESIGNED_HERE | ADDED_HERE


def test_every_spec_sensitivity_floor_matches_the_catalog() -> None:
    for event_type, floor in _spec_catalog_entries().items():
        assert CATALOG[event_type].floor == Sensitivity(floor), event_type


def test_the_analytics_domain_holds_exactly_the_two_types_the_spec_names() -> None:
    assert {t for t in CATALOG if t.startswith("analytics.")} == {"analytics.user_exported", "analytics.user_forgotten"}
    assert "analytics" in CATALOG_DOMAINS


def test_audit_set_is_the_ten_spec_types_plus_trace_swept_and_the_types_added_here() -> None:
    assert len(SPEC_AUDIT_SET) == 10
    assert set(AUDIT_EVENT_TYPES) == SPEC_AUDIT_SET | {"trace.swept"} | ADDED_HERE
    assert {t for t, spec in CATALOG.items() if spec.audit} == AUDIT_EVENT_TYPES


def test_payload_registry_maps_every_type_to_its_strict_model() -> None:
    assert set(PAYLOAD_REGISTRY) == set(CATALOG)
    for event_type, model in PAYLOAD_REGISTRY.items():
        assert issubclass(model, PayloadModel), event_type
        assert model.model_config.get("extra") == "forbid", event_type


def test_every_type_is_in_a_closed_domain_and_avoids_streaming_prefixes() -> None:
    for event_type in CATALOG:
        assert event_type.split(".")[0] in CATALOG_DOMAINS
        assert not event_type.startswith(RESERVED_STREAMING_PREFIXES)


def test_typical_parents_name_catalog_types() -> None:
    for event_type, spec in CATALOG.items():
        assert set(spec.typical_parents) <= set(CATALOG), event_type
        assert spec.typical_actors, event_type


def test_llm_call_failed_error_classes_match_the_adapter_error_class_enum() -> None:
    annotation = LlmCallFailedPayload.model_fields["error_class"].annotation
    assert set(typing.get_args(annotation)) == {c.value for c in ErrorClass}


EXTENDED_STOP_REASONS = {"refusal"}
"""Added here to the spec's stop_reason enum (docs/event-bus.md, "Extended enums")."""


TURN_ONLY_STOP_REASONS = {"error"}
"""turn.completed's own end when the turn failed (docs/cli.md): never a model call's stop reason."""


@pytest.mark.parametrize(("model", "turn_only"), [(LlmCallCompletedPayload, set()),
                                                  (TurnCompletedPayload, TURN_ONLY_STOP_REASONS)])
def test_stop_reason_is_the_spec_enum_plus_refusal_and_every_value_is_canonical(
    model: type[PayloadModel], turn_only: set[str]
) -> None:
    text = SPEC_PATH.read_text(encoding="utf-8")
    spec_sets = {frozenset(re.findall(r'"([a-z_]+)"', found))
                 for found in re.findall(r'"stop_reason": Literal\[([^\]]*)\]', text)}
    assert len(spec_sets) == 1, "the spec's two stop_reason enums differ"
    allowed = set(typing.get_args(model.model_fields["stop_reason"].annotation))
    assert allowed == set(next(iter(spec_sets))) | EXTENDED_STOP_REASONS | turn_only
    assert allowed - turn_only <= {reason.value for reason in StopReason}


EXTENDED_AUTH_FAILED = {"reason": {"insufficient_scope"}, "inbound_shape": {"serve"}}
"""Added here to gateway.auth_failed (docs/event-bus.md, "Extended enums"): a valid key used beyond
its scope, and a key presented to `metis serve` rather than to one of the gateway's shapes."""


@pytest.mark.parametrize("field", sorted(EXTENDED_AUTH_FAILED))
def test_gateway_auth_failed_enums_are_the_spec_ones_plus_the_scope_and_serve_values(field: str) -> None:
    text = SPEC_PATH.read_text(encoding="utf-8")
    entry = text[text.index("gateway.auth_failedSensitivity:"):]
    spec_values = set(re.findall(r'"([a-z_]+)"', re.search(rf'"{field}": Literal\[([^\]]*)\]', entry).group(1)))
    model = PAYLOAD_REGISTRY["gateway.auth_failed"]
    allowed: set[str] = set()
    for arm in typing.get_args(model.model_fields[field].annotation) or ():
        allowed |= set(typing.get_args(arm)) if typing.get_args(arm) else {arm}
    assert allowed == spec_values | EXTENDED_AUTH_FAILED[field]


@pytest.mark.parametrize("name", ["message.delta", "text.delta", "thinking.delta", "tool.use_start"])
def test_reserved_streaming_prefixes_are_refused_at_registration(name: str) -> None:
    spec = EventSpec(name, TurnStartedPayload, Sensitivity.PRIVATE, (Actor.USER,))
    with pytest.raises(EventValidationError, match="reserved streaming prefix"):
        build_catalog([spec])


def test_a_domain_outside_the_closed_list_is_refused() -> None:
    spec = EventSpec("billing.invoiced", TurnStartedPayload, Sensitivity.PRIVATE, (Actor.USER,))
    with pytest.raises(EventValidationError, match="closed domain list"):
        build_catalog([spec])


@pytest.mark.parametrize("name", ["Turn.Started", "turn", "turn.started.extra", "turn.-x"])
def test_malformed_type_names_are_refused(name: str) -> None:
    with pytest.raises(EventValidationError):
        build_catalog([EventSpec(name, TurnStartedPayload, Sensitivity.PRIVATE, (Actor.USER,))])


def test_registering_a_type_twice_is_refused() -> None:
    spec = EventSpec("turn.started", TurnStartedPayload, Sensitivity.PRIVATE, (Actor.USER,))
    with pytest.raises(EventValidationError, match="twice"):
        build_catalog([spec, spec])


def test_the_catalog_is_read_only() -> None:
    with pytest.raises(TypeError):
        CATALOG["turn.started"] = CATALOG["turn.completed"]  # type: ignore[index]


def test_structured_output_steps_extend_the_llm_domain_with_their_floors() -> None:
    floors = {t: CATALOG[t].floor for t in OUTPUT_STEPS}
    assert floors.pop("llm.output_refused") is Sensitivity.PRIVATE  # the provider's refusal text may echo the prompt
    assert set(floors.values()) == {Sensitivity.PSEUDONYMOUS}
    assert all(CATALOG[t].domain == "llm" and not CATALOG[t].audit for t in OUTPUT_STEPS)


ADDITIVE_FIELDS = {"llm.call_started": {"request_options"}}
"""Nullable fields added here to a spec payload (docs/event-bus.md "Additive fields"), each None by default,
so every event recorded before them still validates."""


@pytest.mark.parametrize("event_type", sorted(ADDITIVE_FIELDS))
def test_a_spec_payload_has_the_spec_fields_plus_only_the_documented_additive_ones(event_type: str) -> None:
    text = SPEC_PATH.read_text(encoding="utf-8")
    entry = text[text.index(f"{event_type}Sensitivity:"):]
    body = entry[entry.index("{"):entry.index("}")]
    spec_fields = set(re.findall(r'^"([a-z_]+)":', body, flags=re.MULTILINE))
    model = PAYLOAD_REGISTRY[event_type]
    assert spec_fields and set(model.model_fields) == spec_fields | ADDITIVE_FIELDS[event_type]
    for name in ADDITIVE_FIELDS[event_type]:
        assert model.model_fields[name].default is None and not model.model_fields[name].is_required()
