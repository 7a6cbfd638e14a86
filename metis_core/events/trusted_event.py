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
from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import orjson
from pydantic import BaseModel

from metis_core.errors import EventValidationError
from metis_core.events.catalog import CATALOG, make_event, spec_for
from metis_core.events.envelope import Actor, Event, Sensitivity
from metis_core.events.event_spec import EventSpec
from metis_core.ids import new_ulid

_UNSET = object()


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


@dataclass(frozen=True, slots=True)
class _PayloadPlan:
    """What `make_event`'s dump does to one payload model's fields, precomputed."""

    template: dict[str, Any]
    """Every field in the model's order: its default, or _UNSET (required, or made by a factory)."""
    required: frozenset[str]
    made: tuple[tuple[str, Callable[[], Any]], ...]
    """Fields whose default a factory makes (a fresh list each time)."""
    copied: tuple[str, ...]
    """Fields whose plain default is a list or dict (copied, never shared between events)."""
    floats: tuple[str, ...]
    """Float fields: an int given there is dumped as a float."""
    spec: EventSpec | None = None
    """The catalog entry, for an event payload's plan."""

    @classmethod
    def of(cls, model: type[BaseModel], spec: EventSpec | None = None) -> _PayloadPlan:
        fields = model.model_fields
        return cls(
            template={name: _UNSET if info.is_required() or info.default_factory else info.default
                      for name, info in fields.items()},
            required=frozenset(name for name, info in fields.items() if info.is_required()),
            made=tuple((name, info.default_factory) for name, info in fields.items()  # type: ignore[misc]
                       if info.default_factory is not None),
            copied=tuple(name for name, info in fields.items() if isinstance(info.default, (list, dict))),
            floats=tuple(name for name, info in fields.items() if _is_float(info.annotation)),
            spec=spec,
        )  # fmt: skip

    def build(self, payload: Mapping[str, Any], what: str) -> dict[str, Any]:
        """The model's dump of `payload` (see `trusted_payload`); `what` names it in errors."""
        built = {**self.template, **payload}  # the model's order; a field given keeps its place
        if len(built) != len(self.template):
            unknown = sorted(set(payload) - set(self.template))
            raise EventValidationError(f"{what} payload is invalid: {', '.join(unknown)}: not a field of the model")
        for name in self.required:  # a loop, not `required <= payload.keys()`: a set against a keys view
            if name not in payload:  # goes through the view's reflected comparison on every event
                missing = sorted(self.required.difference(payload.keys()))  # a frozenset, as its type says
                raise EventValidationError(f"{what} payload is invalid: {', '.join(missing)}: Field required")
        for name, factory in self.made:
            if name not in payload:
                built[name] = factory()
        for name in self.copied:
            if name not in payload:
                built[name] = copy(built[name])
        for name in self.floats:
            if type(built[name]) is int:
                built[name] = float(built[name])
        return built


_PLANS: dict[str, _PayloadPlan] = {name: _PayloadPlan.of(spec.payload_model, spec) for name, spec in CATALOG.items()}
_MODEL_PLANS: dict[type[BaseModel], _PayloadPlan] = {}


def trusted_dump(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """What `model(**values).model_dump(mode="json")` gives, built as `trusted_payload` builds a payload
    (for a nested part of one, such as llm.call_started's `request_options`): same conditions."""
    plan = _MODEL_PLANS.get(model)
    if plan is None:
        plan = _MODEL_PLANS[model] = _PayloadPlan.of(model)
    return plan.build(values, model.__name__)


def trusted_payload(event_type: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The dict `make_event` would store for `payload`, given that every value is already what the
    model's JSON dump gives for it (nested models as their dumped dicts). Unknown or missing
    required fields raise EventValidationError; the values themselves are not checked."""
    return _plan(event_type).build(payload, event_type)


def _plan(event_type: str) -> _PayloadPlan:
    plan = _PLANS.get(event_type)
    if plan is None:
        spec_for(event_type)  # raises: not a catalog type
        raise AssertionError(event_type)
    return plan


def _sensitivity(spec: EventSpec, payload: dict[str, Any]) -> Sensitivity:
    """The catalog's floor, or what the type's rule makes of the payload (rules read its fields)."""
    if spec.sensitivity_rule is None:
        return spec.floor
    return spec.sensitivity_rule(SimpleNamespace(**payload))


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
    plan = _plan(event_type)
    spec = plan.spec
    assert spec is not None
    built = plan.build(payload, event_type)
    return built_event(
        Event, session_id, turn_id, parent.__dict__["id"] if isinstance(parent, Event) else parent, event_type,
        actor if actor is not None else spec.default_actor, built, _sensitivity(spec, built),
    )


# What pydantic's own model_construct sets, through BaseModel's slot descriptors themselves (a frozen model
# refuses setattr; `object.__setattr__` by name looks each descriptor up again on every event).
_new = object.__new__
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_BUILT_FIELDS = frozenset({"session_id", "turn_id", "parent_event_id", "type", "actor", "payload", "sensitivity"})
"""The fields `Event(...)` records as set when given these arguments (`model_fields_set`)."""


def built_event(
    cls: type[Event], session_id: str, turn_id: str | None, parent_event_id: str | None, type: str, actor: Actor,
    payload: dict[str, Any], sensitivity: Sensitivity,
) -> Event:
    """`Event.built`'s body (see there): an event built from already-checked parts without validating
    them again; the record writer makes four events a call."""
    event = _new(cls)
    _set_dict(event, {
        "id": new_ulid(), "timestamp": datetime.now(UTC), "session_id": session_id, "turn_id": turn_id,
        "parent_event_id": parent_event_id, "type": type, "actor": actor, "payload": payload,
        "sensitivity": sensitivity,
    })  # fmt: skip
    _set_fields_set(event, _BUILT_FIELDS)
    _set_extra(event, None)
    _set_private(event, None)
    return event


def check_trusted(event: Event, payload: Mapping[str, Any]) -> None:
    """Raise EventValidationError unless `event` (built by `make_trusted_event` from `payload`) is what
    `make_event` builds: the same payload, in the same key order, the same actor and sensitivity."""
    validated = make_event(event.type, payload, session_id=event.session_id, turn_id=event.turn_id,
                           parent=event.parent_event_id, actor=event.actor)
    same = (
        type(event.actor) is Actor
        and list(event.payload.items()) == list(validated.payload.items())
        and orjson.dumps(event.payload) == orjson.dumps(validated.payload)
        and event.sensitivity is validated.sensitivity
    )
    if not same:
        raise EventValidationError(
            f"{event.type}: the trusted construction gave {event.payload!r} ({event.sensitivity.value}) where "
            f"the validated one gives {validated.payload!r} ({validated.sensitivity.value}); build this "
            "payload's values as the model dumps them, or emit it with emit_new"
        )
