"""`make_trusted_event`: an event from a payload its emitter built from its own typed values, unvalidated.

`make_event` dumps a payload to JSON, validates it against the catalog model and dumps the model
back to a dict (~10 µs an event). An emitter whose payloads are plain JSON values it computed itself
(the gateway's record: counts, ids, floats, enum strings) may skip that: this builds the same dict
the validated path would (the model's fields in its order, defaults filled in, ints in float fields
as floats) and the same sensitivity. It checks only the field names. The bus in strict mode (tests,
development) builds each trusted event the validated way too and refuses any difference
(`EventBus.emit_trusted`), so every test that emits one checks it.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping
from copy import copy
from typing import Any

import orjson
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from metis_core.errors import EventValidationError
from metis_core.events.catalog import CATALOG, make_event, spec_for
from metis_core.events.envelope import Actor, Event, Sensitivity
from metis_core.events.event_spec import EventSpec

_REQUIRED = object()

FieldPlan = tuple[str, Any, Callable[[], Any] | None, bool]
"""(name, default or _REQUIRED, default factory, a float field)."""


def _is_float(annotation: Any) -> bool:
    """A field typed float or float | None (Annotated constraints looked through)."""
    if annotation is float:
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        return _is_float(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and _is_float(args[0])
    return False


def _plan(field_name: str, info: FieldInfo) -> FieldPlan:
    factory = info.default_factory
    if factory is not None:
        return field_name, None, factory, _is_float(info.annotation)  # type: ignore[return-value]
    default = _REQUIRED if info.is_required() else info.default
    return field_name, default, None, _is_float(info.annotation)


def _plans(model: type[BaseModel]) -> tuple[FieldPlan, ...]:
    return tuple(_plan(name, info) for name, info in model.model_fields.items())


_PLANS: dict[str, tuple[FieldPlan, ...]] = {name: _plans(spec.payload_model) for name, spec in CATALOG.items()}


def trusted_payload(event_type: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The dict `make_event` would store for `payload`, given that every value is already what the
    model's JSON dump gives for it (nested models as their dumped dicts). Unknown or missing
    required fields raise EventValidationError; the values themselves are not checked."""
    plans = _PLANS.get(event_type)
    if plans is None:
        spec_for(event_type)  # raises: not a catalog type
        raise AssertionError(event_type)
    built: dict[str, Any] = {}
    for name, default, factory, is_float in plans:
        value = payload.get(name, _REQUIRED)
        if value is _REQUIRED:
            if factory is not None:
                value = factory()
            elif default is _REQUIRED:
                raise EventValidationError(f"{event_type} payload is invalid: {name}: Field required")
            else:
                value = copy(default) if isinstance(default, (list, dict)) else default
        elif is_float and type(value) is int:
            value = float(value)
        built[name] = value
    if len(built) != len(payload):
        unknown = sorted(set(payload) - set(built))
        raise EventValidationError(f"{event_type} payload is invalid: {', '.join(unknown)}: not a field of the model")
    return built


def _sensitivity(spec: EventSpec, payload: dict[str, Any]) -> Sensitivity:
    if spec.sensitivity_rule is None:
        return spec.floor
    return spec.sensitivity_rule(spec.payload_model.model_construct(**payload))


def make_trusted_event(
    event_type: str,
    payload: Mapping[str, Any],
    *,
    session_id: str,
    turn_id: str | None = None,
    parent: Event | str | None = None,
    actor: Actor | None = None,
) -> Event:
    """`make_event` without validating the payload's values (see the module docstring)."""
    spec = spec_for(event_type)
    built = trusted_payload(event_type, payload)
    return Event(
        session_id=session_id,
        turn_id=turn_id,
        parent_event_id=parent.id if isinstance(parent, Event) else parent,
        type=event_type,
        actor=actor if actor is not None else spec.default_actor,
        payload=built,
        sensitivity=_sensitivity(spec, built),
    )


def check_trusted(event: Event, payload: Mapping[str, Any]) -> None:
    """Raise EventValidationError unless `event` (built by `make_trusted_event` from `payload`) is what
    `make_event` builds: the same payload, in the same key order, the same actor and sensitivity."""
    validated = make_event(event.type, payload, session_id=event.session_id, turn_id=event.turn_id,
                           parent=event.parent_event_id, actor=event.actor)
    same = (
        list(event.payload.items()) == list(validated.payload.items())
        and orjson.dumps(event.payload) == orjson.dumps(validated.payload)
        and event.sensitivity is validated.sensitivity
    )
    if not same:
        raise EventValidationError(
            f"{event.type}: the trusted construction gave {event.payload!r} ({event.sensitivity.value}) where "
            f"the validated one gives {validated.payload!r} ({validated.sensitivity.value}); build this "
            "payload's values as the model dumps them, or emit it with emit_new"
        )
