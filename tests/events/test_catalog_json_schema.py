"""The catalog's JSON Schema export: one $defs entry per type, annotated, and usable by a
standard validator on real payloads."""

from __future__ import annotations

import copy
import functools

import jsonschema
import pytest
from event_payload_samples import MINIMAL_PAYLOADS, OPT_IN_PAYLOADS, minimal

from metis_core.events.catalog import AUDIT_EVENT_TYPES, CATALOG, catalog_json_schema, make_event

SCHEMA = catalog_json_schema()


@functools.cache
def _validator_for(event_type: str) -> jsonschema.protocols.Validator:
    schema = {"$schema": SCHEMA["$schema"], "$ref": f"#/$defs/{event_type}", "$defs": SCHEMA["$defs"]}
    validator_class = jsonschema.validators.validator_for(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def test_the_export_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_every_type_has_a_defs_entry_with_sensitivity_and_audit_annotations() -> None:
    for event_type, spec in CATALOG.items():
        entry = SCHEMA["$defs"][event_type]
        assert entry["x-sensitivity"] == spec.floor.value
        assert entry["x-audit"] is (event_type in AUDIT_EVENT_TYPES)
        assert entry["additionalProperties"] is False
    assert set(SCHEMA["x-event-types"]) == set(CATALOG)


@pytest.mark.parametrize("event_type", sorted(CATALOG))
def test_real_payloads_validate_against_the_exported_schema(event_type: str) -> None:
    stored = make_event(event_type, MINIMAL_PAYLOADS[event_type], session_id="s").payload
    _validator_for(event_type).validate(stored)


def test_opt_in_payloads_validate_against_the_exported_schema() -> None:
    for event_type, (payload, _) in OPT_IN_PAYLOADS.items():
        _validator_for(event_type).validate(make_event(event_type, payload, session_id="s").payload)


def test_the_exported_schema_rejects_what_the_catalog_rejects() -> None:
    validator = _validator_for("route.decided")
    bad_chain = copy.deepcopy(MINIMAL_PAYLOADS["route.decided"])
    bad_chain["chain"][0]["verdict"] = "maybe"
    assert not validator.is_valid(bad_chain)
    assert not validator.is_valid(minimal("route.decided", extra_field=1))
    assert not _validator_for("pattern.recorded").is_valid(minimal("pattern.recorded", cost_usd_at_record=0.1))
