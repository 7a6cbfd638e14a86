"""JSON Schema export of the catalog: one `$defs` entry per event type, keyed by type name.

Each entry is the payload model's validation schema plus `x-` annotations (sensitivity floor,
audit flag, phase, typical actors and parents). Nested payload parts keep their model names.
This module only describes; it never validates events (the catalog does that with pydantic).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic.json_schema import models_json_schema

from metis_core.events.event_spec import EventSpec

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def build_catalog_json_schema(specs: Iterable[EventSpec]) -> dict[str, Any]:
    specs = list(specs)
    _, combined = models_json_schema(
        [(spec.payload_model, "validation") for spec in specs], ref_template="#/$defs/{model}"
    )
    model_defs: dict[str, Any] = dict(combined.get("$defs", {}))
    type_defs: dict[str, Any] = {}
    for spec in specs:
        schema = dict(model_defs.pop(spec.payload_model.__name__))
        schema["x-event-type"] = spec.type
        schema["x-sensitivity"] = spec.floor.value
        schema["x-sensitivity-computed"] = spec.sensitivity_rule is not None
        schema["x-audit"] = spec.audit
        schema["x-phase"] = spec.phase
        schema["x-typical-actors"] = [actor.value for actor in spec.typical_actors]
        schema["x-typical-parents"] = list(spec.typical_parents)
        type_defs[spec.type] = schema
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "metis-core event catalog",
        "description": (
            "Payload schemas of every bus event type (event-bus-and-trace-catalog.md §6). "
            "Validate a payload against {'$ref': '#/$defs/<type>'}."
        ),
        "x-event-types": sorted(type_defs),
        "x-audit-event-types": sorted(t for t, s in type_defs.items() if s["x-audit"]),
        "$defs": {**type_defs, **model_defs},
    }
