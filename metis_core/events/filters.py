"""`EventFilter`: which events a subscription receives, by session, type and actor.

None in a dimension means "all". Event types named in a filter must be catalog types, so a typo
fails at subscribe time instead of silently matching nothing. Matching is all the filter does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from metis_core.errors import EventValidationError
from metis_core.events.catalog import CATALOG
from metis_core.events.envelope import Actor, Event


def _frozen(values: Iterable[str] | None) -> frozenset[str] | None:
    if values is None:
        return None
    if isinstance(values, str):  # a bare string would otherwise become a set of characters
        return frozenset({values})
    return frozenset(values)


@dataclass(frozen=True, init=False)
class EventFilter:
    session_ids: frozenset[str] | None
    event_types: frozenset[str] | None
    actors: frozenset[Actor] | None

    def __init__(
        self,
        session_ids: Iterable[str] | None = None,
        event_types: Iterable[str] | None = None,
        actors: Iterable[Actor | str] | None = None,
    ) -> None:
        types = _frozen(event_types)
        unknown = sorted(types - CATALOG.keys()) if types is not None else []
        if unknown:
            raise EventValidationError(f"filter names event types that are not in the catalog: {', '.join(unknown)}")
        if isinstance(actors, str):
            actors = [actors]
        object.__setattr__(self, "session_ids", _frozen(session_ids))
        object.__setattr__(self, "event_types", types)
        object.__setattr__(self, "actors", None if actors is None else frozenset(Actor(a) for a in actors))

    @property
    def matches_everything(self) -> bool:
        return self.session_ids is None and self.event_types is None and self.actors is None

    def matches(self, event: Event) -> bool:
        return (
            (self.session_ids is None or event.session_id in self.session_ids)
            and (self.event_types is None or event.type in self.event_types)
            and (self.actors is None or event.actor in self.actors)
        )

    def describe(self) -> dict[str, Any]:
        """JSON form for bus.subscriber_registered: sorted lists, or null for "all"."""
        return {
            "session_ids": None if self.session_ids is None else sorted(self.session_ids),
            "event_types": None if self.event_types is None else sorted(self.event_types),
            "actors": None if self.actors is None else sorted(a.value for a in self.actors),
        }
