"""`StreamFilter`: what one network client asked to see, capped by what it is allowed to see.

The bus-level part (sessions, types) becomes an `EventFilter`, so the bus never hands the client
an event it did not ask for; domains and the sensitivity ceiling are checked on the client's own
worker. Parsing a client's JSON request into a filter raises `StreamRequestError` with the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from metis_core.errors import EventValidationError, StreamRequestError
from metis_core.events.catalog import CATALOG
from metis_core.events.envelope import Event, Sensitivity
from metis_core.events.filters import EventFilter

DOMAINS = frozenset(event_type.split(".", 1)[0] for event_type in CATALOG)


@dataclass(frozen=True)
class StreamFilter:
    bus_filter: EventFilter
    domains: frozenset[str] | None
    most_private: Sensitivity
    """The most private sensitivity the client receives (private = everything)."""

    def admits(self, event: Event) -> bool:
        return (
            self.bus_filter.matches(event)
            and (self.domains is None or event.type.split(".", 1)[0] in self.domains)
            and event.sensitivity.rank >= self.most_private.rank
        )

    def describe(self) -> dict[str, Any]:
        return {
            **self.bus_filter.describe(),
            "domains": None if self.domains is None else sorted(self.domains),
            "max_sensitivity": self.most_private.value,
        }


def _names(request: Mapping[str, Any], key: str) -> list[str] | None:
    value = request.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StreamRequestError(f"{key!r} must be a list of strings (or omitted for all)")
    return value


def parse_stream_filter(request: Mapping[str, Any], clearance: Sensitivity) -> StreamFilter:
    """The filter a client asked for (`session_ids`, `types`, `domains`, `max_sensitivity`),
    with the sensitivity ceiling never more private than `clearance`."""
    sessions, types, domains = _names(request, "session_ids"), _names(request, "types"), _names(request, "domains")
    try:
        bus_filter = EventFilter(session_ids=sessions, event_types=types)
    except EventValidationError as error:
        raise StreamRequestError(f"{error}; the catalog is in docs/event-bus.md") from None
    unknown = sorted(set(domains or []) - DOMAINS)
    if unknown:
        raise StreamRequestError(f"unknown domains {', '.join(unknown)}; use some of {', '.join(sorted(DOMAINS))}")
    raw = request.get("max_sensitivity", clearance.value)
    try:
        asked = Sensitivity(raw)
    except ValueError:
        choices = ", ".join(s.value for s in Sensitivity)
        raise StreamRequestError(f"max_sensitivity {raw!r} is not one of {choices}") from None
    most_private = asked if asked.rank >= clearance.rank else clearance
    return StreamFilter(bus_filter, None if domains is None else frozenset(domains), most_private)
