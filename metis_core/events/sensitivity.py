"""Which sensitivity an event is recorded with (spec §4.4.1).

The catalog floor is the most private recording a type can have. Opt-in fields may move the
recording toward less private (rule functions on the EventSpec); an explicit override may too,
but never toward more private than the floor. Nothing here reads or changes payload content.
"""

from __future__ import annotations

from pydantic import BaseModel

from metis_core.errors import EventValidationError
from metis_core.events.envelope import Sensitivity
from metis_core.events.event_spec import EventSpec


def computed_sensitivity(spec: EventSpec, payload: BaseModel) -> Sensitivity:
    """The sensitivity implied by which opt-in fields of a validated payload are populated."""
    if spec.sensitivity_rule is None:
        return spec.floor
    return spec.sensitivity_rule(payload)


def check_not_below_floor(spec: EventSpec, sensitivity: Sensitivity) -> None:
    """Raise EventValidationError if `sensitivity` is more private than the type's floor."""
    if sensitivity.rank < spec.floor.rank:
        raise EventValidationError(
            f"{spec.type}: sensitivity {sensitivity.value!r} is more private than the catalog floor "
            f"{spec.floor.value!r}; the floor is already the most private recording of this type, "
            "so record it at the floor or at something less private"
        )


def recorded_sensitivity(spec: EventSpec, payload: BaseModel, override: Sensitivity | None = None) -> Sensitivity:
    """The value to put on the event: the override if given and allowed, else the computed one."""
    if override is None:
        return computed_sensitivity(spec, payload)
    check_not_below_floor(spec, override)
    return override
