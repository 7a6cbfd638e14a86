"""What the catalog knows about one event type: payload model, sensitivity floor, audit flag.

`EventSpec` is plain data; the closed domain list and the reserved streaming prefixes that every
catalog type name is checked against live here too. Registration itself is in `catalog.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from metis_core.errors import EventValidationError
from metis_core.events.envelope import Actor, Sensitivity

CATALOG_DOMAINS: frozenset[str] = frozenset(
    {
        "session", "turn", "llm", "tool", "route", "routing", "skill", "memory", "delegate",
        "feedback", "bus", "pattern", "provider", "eval", "gateway", "quota", "trace", "analytics",
    }
)  # fmt: skip
"""Closed list (spec §4.5 plus the routing/gateway/quota/trace domains the catalog uses)."""

RESERVED_STREAMING_PREFIXES: tuple[str, ...] = ("message.", "text.", "thinking.", "tool.use_")
"""Transient streaming event names (spec §4.5.1); never bus catalog types."""

_TYPE_NAME = re.compile(r"^[a-z]+\.[a-z][a-z0-9_]*$")

PayloadModelClass = type[BaseModel]

SensitivityRule = Callable[[Any], Sensitivity]
"""Given the validated payload model, the sensitivity to record when opt-in fields change it."""


@dataclass(frozen=True)
class EventSpec:
    """One catalog entry (spec §6): the contract a `<domain>.<verb_phrase>` event obeys."""

    type: str
    payload_model: PayloadModelClass
    floor: Sensitivity
    """The most private recording this type can have (§4.4.1); overrides may only go less private."""
    typical_actors: tuple[Actor, ...]
    typical_parents: tuple[str, ...] = ()
    """Catalog types this event usually descends from; empty for roots or 'varies'."""
    phase: str = "1"
    audit: bool = False
    """Audit-flagged types are never deleted by trace retention sweeps (§7.3)."""
    sensitivity_rule: SensitivityRule | None = field(default=None, compare=False)

    @property
    def domain(self) -> str:
        return self.type.split(".", 1)[0]

    @property
    def default_actor(self) -> Actor:
        return self.typical_actors[0]


def check_type_name(event_type: str) -> None:
    """Raise EventValidationError unless `event_type` may be a catalog type name."""
    for prefix in RESERVED_STREAMING_PREFIXES:
        if event_type.startswith(prefix):
            raise EventValidationError(
                f"{event_type!r} uses the reserved streaming prefix {prefix!r}; streaming events go "
                "straight from the agent loop to clients and are never catalog types (spec §4.5.1)"
            )
    if not _TYPE_NAME.match(event_type):
        raise EventValidationError(f"{event_type!r} is not a catalog type name; use lowercase '<domain>.<verb_phrase>'")
    domain = event_type.split(".", 1)[0]
    if domain not in CATALOG_DOMAINS:
        raise EventValidationError(
            f"{event_type!r} is in domain {domain!r}, which is not in the closed domain list "
            f"({', '.join(sorted(CATALOG_DOMAINS))}); adding a domain is a spec change"
        )
