"""The closed event catalog: every bus event type, its payload model and its sensitivity floor.

`make_event` is the one way code should build an event: it validates the payload, computes the
recorded sensitivity and fills the typical actor. `validate_event` is what the bus runs on
`emit`. Adding a type means a spec change and a new `EventSpec` in `events/payloads/`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import orjson
from pydantic import BaseModel, ValidationError

from metis_core.errors import EventValidationError
from metis_core.events.catalog_schema import build_catalog_json_schema
from metis_core.events.envelope import Actor, Event, Sensitivity
from metis_core.events.event_spec import EventSpec, check_type_name
from metis_core.events.payloads import ALL_EVENT_SPECS
from metis_core.events.sensitivity import check_not_below_floor, recorded_sensitivity


def build_catalog(specs: Iterable[EventSpec]) -> Mapping[str, EventSpec]:
    """Check every spec (name, closed domain, reserved prefixes, duplicates) and index by type."""
    catalog: dict[str, EventSpec] = {}
    for spec in specs:
        check_type_name(spec.type)
        if spec.type in catalog:
            raise EventValidationError(f"event type {spec.type!r} is registered twice; keep one EventSpec")
        if not spec.typical_actors:
            raise EventValidationError(f"event type {spec.type!r} needs at least one typical actor")
        catalog[spec.type] = spec
    return MappingProxyType(catalog)


CATALOG: Mapping[str, EventSpec] = build_catalog(ALL_EVENT_SPECS)
"""Every event type the bus accepts, keyed by type name. Read-only."""

PAYLOAD_REGISTRY: Mapping[str, type[BaseModel]] = MappingProxyType(
    {event_type: spec.payload_model for event_type, spec in CATALOG.items()}
)

AUDIT_EVENT_TYPES: frozenset[str] = frozenset(t for t, spec in CATALOG.items() if spec.audit)
"""Types trace retention never deletes: the ten of spec §7.3 plus trace.swept."""

_VALIDATORS = {event_type: model.__pydantic_validator__ for event_type, model in PAYLOAD_REGISTRY.items()}


def spec_for(event_type: str) -> EventSpec:
    """The catalog entry for `event_type`; EventValidationError if the type is not in the catalog."""
    spec = CATALOG.get(event_type)
    if spec is None:
        raise EventValidationError(
            f"{event_type!r} is not a catalog event type; the catalog is closed "
            "(event-bus-and-trace-catalog.md §6), so use an existing type or change the spec first"
        )
    return spec


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise TypeError(f"Decimal {value} is not finite")
        return format(value, "f")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _violations(error: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<payload>'}: {e['msg']}" for e in error.errors())


def _validated_payload(event_type: str, payload: bytes) -> BaseModel:
    try:
        model: BaseModel = _VALIDATORS[event_type].validate_json(payload, strict=True)
    except ValidationError as error:
        raise EventValidationError(f"{event_type} payload is invalid: {_violations(error)}") from None
    return model


def _payload_json(event_type: str, payload: Mapping[str, Any], *, allow_decimal: bool) -> bytes:
    try:
        return orjson.dumps(payload, default=_json_default if allow_decimal else None)
    except TypeError as error:  # orjson.JSONEncodeError is a TypeError
        raise EventValidationError(f"{event_type} payload is not plain JSON data: {error}") from None


def validate_payload(event_type: str, payload: Mapping[str, Any] | BaseModel) -> BaseModel:
    """The payload as its validated catalog model (strict: no type coercion, no unknown fields)."""
    spec = spec_for(event_type)
    if isinstance(payload, BaseModel):
        if type(payload) is not spec.payload_model:
            raise EventValidationError(
                f"{event_type} needs a {spec.payload_model.__name__} payload, got {type(payload).__name__}"
            )
        payload = payload.model_dump(mode="json")
    return _validated_payload(event_type, _payload_json(event_type, payload, allow_decimal=True))


def make_event(
    event_type: str,
    payload: Mapping[str, Any] | BaseModel,
    *,
    session_id: str,
    turn_id: str | None = None,
    parent: Event | str | None = None,
    actor: Actor | None = None,
    sensitivity: Sensitivity | None = None,
) -> Event:
    """Build a valid catalog event. The payload is stored as its JSON-mode dict.

    `parent` is the causing Event or its id. `actor` defaults to the type's typical actor.
    `sensitivity` overrides the computed one; it may not be more private than the type's floor.
    Raises EventValidationError for an unknown type, a bad payload or a too-private override.
    """
    spec = spec_for(event_type)
    model = validate_payload(event_type, payload)
    recorded = recorded_sensitivity(spec, model, sensitivity)
    return Event(
        session_id=session_id,
        turn_id=turn_id,
        parent_event_id=parent.id if isinstance(parent, Event) else parent,
        type=event_type,
        actor=actor if actor is not None else spec.default_actor,
        payload=model.model_dump(mode="json"),
        sensitivity=recorded,
    )


def validate_event(event: Event) -> None:
    """Check an already built Event against the catalog: known type, valid JSON payload, and a
    sensitivity not more private than the floor. Raises EventValidationError."""
    spec = spec_for(event.type)
    _validated_payload(event.type, _payload_json(event.type, event.payload, allow_decimal=False))
    check_not_below_floor(spec, event.sensitivity)


def catalog_json_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of every payload: `$defs[<type>]`, with x-sensitivity and x-audit."""
    return build_catalog_json_schema(CATALOG.values())
