"""A session's trace as spans for the console's waterfall: each span a start event and its end.

Turns, model calls, tool calls and delegations open with one event and close with another whose
parent is the opener (turn.completed closes by turn id). A routing decision and a structured
output attempt are instants. A span nests under the span of its start event's nearest ancestor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from metis_core.events.envelope import Event

OPENERS = {"turn.started": "turn", "llm.call_started": "model call", "tool.called": "tool call",
           "delegate.started": "delegation"}
CLOSERS = {"turn.completed": "ok", "turn.cancelled": "cancelled", "llm.call_completed": "ok",
           "llm.call_failed": "error", "tool.completed": "ok", "tool.failed": "error",
           "delegate.completed": "ok", "delegate.failed": "error"}
INSTANTS = {"route.decided": ("routing", "ok"), "pattern.matched": ("routing", "ok"),
            "llm.output_retried": ("structured attempt", "retry"),
            "llm.output_recovered": ("structured attempt", "ok"),
            "llm.output_truncated": ("structured attempt", "retry"),
            "llm.output_nl_to_format": ("structured attempt", "retry"),
            "llm.output_exhausted": ("structured attempt", "error"),
            "llm.output_refused": ("structured attempt", "refused")}


@dataclass
class Span:
    id: str
    kind: str
    name: str
    start: Event
    end: Event | None = None
    parent: str | None = None
    events: list[str] = field(default_factory=list)

    def json(self, origin_us: float) -> dict[str, Any]:
        started = self.start.timestamp.timestamp() * 1e6
        ended = (self.end or self.start).timestamp.timestamp() * 1e6
        status = CLOSERS.get(self.end.type, "ok") if self.end else INSTANTS.get(self.start.type, ("", "open"))[1]
        if self.kind in OPENERS.values() and self.end is None:
            status = "open"
        return {"id": self.id, "kind": self.kind, "name": self.name, "parent": self.parent, "status": status,
                "offset_ms": round((started - origin_us) / 1000, 3), "duration_ms": round((ended - started) / 1000, 3),
                **_figures(self), "events": self.events}


def _figures(span: Span) -> dict[str, Any]:
    """Tokens, cost and retries where the span's events carry them (None when withheld or absent)."""
    payload = (span.end.payload if span.end is not None else span.start.payload) or {}
    tokens_in = payload.get("input_tokens", payload.get("total_input_tokens"))
    tokens_out = payload.get("output_tokens", payload.get("total_output_tokens"))
    cost = payload.get("cost_usd", payload.get("total_cost_usd"))
    unpriced = int((payload.get("signals_extra") or {}).get("unpriced_calls") or 0)  # a turn's calls with no price
    if payload.get("pricing_version") == "unpriced":
        cost, unpriced = None, 1  # a 0.0 with no price is unknown, not free
    elif unpriced and not cost:
        cost = None  # nothing in the turn was priced: its total is unknown
    return {"input_tokens": tokens_in, "output_tokens": tokens_out,
            "cost_usd": None if cost is None else format(Decimal(str(cost)), "f"), "unpriced_calls": unpriced,
            "retries": payload.get("retry_count") or 0}


def _name(event: Event) -> str:
    if event.type == "turn.started":
        return event.turn_id or ""
    p = event.payload or {}
    for key in ("model", "chosen_model", "tool_name", "resolved_model"):
        if p.get(key):
            return str(p[key])
    return event.type


def build_spans(events: list[Event]) -> list[Span]:
    """The spans of a session's events (in id order), each with the ids of the events it covers."""
    by_id = {event.id: event for event in events}
    spans: dict[str, Span] = {}
    owner: dict[str, str] = {}
    turn_spans: dict[str, str] = {}
    for event in events:
        if event.type in OPENERS or event.type in INSTANTS:
            kind = OPENERS.get(event.type) or INSTANTS[event.type][0]
            span = spans[event.id] = Span(event.id, kind, _name(event), event, parent=_parent_span(event, by_id, owner))
            owner[event.id] = span.id
            span.events.append(event.id)
            if event.type == "turn.started" and event.turn_id:
                turn_spans[event.turn_id] = span.id
            continue
        closes = event.parent_event_id if event.parent_event_id in spans else None
        if event.type in ("turn.completed", "turn.cancelled") and event.turn_id in turn_spans:
            closes = turn_spans[event.turn_id]
        if event.type in CLOSERS and closes is not None and spans[closes].end is None:
            spans[closes].end = event
            owner[event.id] = closes
            spans[closes].events.append(event.id)
            continue
        holder = _parent_span(event, by_id, owner)
        if holder is not None:
            owner[event.id] = holder
            spans[holder].events.append(event.id)
    return list(spans.values())


def _parent_span(event: Event, by_id: dict[str, Event], owner: dict[str, str]) -> str | None:
    parent = event.parent_event_id
    for _ in range(64):  # a causal chain is short; a cycle in hostile data must not hang the server
        if parent is None:
            return None
        if parent in owner:
            return owner[parent]
        found = by_id.get(parent)
        parent = found.parent_event_id if found is not None else None
    return None


def timeline_json(events: list[Event]) -> dict[str, Any]:
    if not events:
        return {"start": None, "duration_ms": 0, "spans": []}
    origin = events[0].timestamp.timestamp() * 1e6
    finish = max(event.timestamp.timestamp() * 1e6 for event in events)
    return {"start": events[0].timestamp.isoformat(), "duration_ms": round((finish - origin) / 1000, 3),
            "spans": [span.json(origin) for span in build_spans(events)]}
