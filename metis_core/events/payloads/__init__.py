"""Payload models of every catalog event type, one module per domain, and their `EventSpec`s.

`ALL_EVENT_SPECS` is what `metis_core.events.catalog` registers. Models describe the JSON a
payload may hold; how a payload becomes an Event (sensitivity, actor) is the catalog's job.
"""

from __future__ import annotations

from metis_core.events.event_spec import EventSpec
from metis_core.events.payloads import (
    analytics,
    bus,
    delegate,
    evaluation,
    feedback,
    gateway,
    llm,
    llm_output,
    memory,
    pattern,
    provider,
    quota,
    routing,
    session,
    skill,
    tool,
    trace,
    turn,
)

ALL_EVENT_SPECS: tuple[EventSpec, ...] = (
    *session.SPECS,
    *turn.SPECS,
    *llm.SPECS,
    *llm_output.SPECS,
    *tool.SPECS,
    *routing.SPECS,
    *pattern.SPECS,
    *skill.SPECS,
    *memory.SPECS,
    *delegate.SPECS,
    *feedback.SPECS,
    *bus.SPECS,
    *provider.SPECS,
    *evaluation.SPECS,
    *gateway.SPECS,
    *quota.SPECS,
    *trace.SPECS,
    *analytics.SPECS,
)
