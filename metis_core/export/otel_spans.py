"""A span under construction from recorded events, and its OTLP/JSON form.

A span opens on one event and closes on another; spans that never closed (a cancelled turn, a
trace cut short) are ended by `finish` at a time their turn supplies. Which events open, close or
decorate which span, and with what attributes, is `otel_genai`'s business, not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from metis_core.events.envelope import Event
from metis_core.export.otlp_json import (
    STATUS_CODE_ERROR,
    STATUS_CODE_UNSET,
    AttributeValue,
    attribute_list,
    span_id_for_event,
)


@dataclass(eq=False)
class Span:
    opening: Event
    name: str
    kind: int
    parent: Span | None
    attributes: dict[str, AttributeValue | None]
    end: Event | None = None
    end_us: int | None = None
    status_code: int = STATUS_CODE_UNSET
    status_message: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    latest_us: int = 0
    """The latest time of any event absorbed into this span or its children."""

    def __post_init__(self) -> None:
        self.span_id = span_id_for_event(self.opening.id)
        self.latest_us = self.opening.timestamp_us

    @property
    def start_us(self) -> int:
        return self.opening.timestamp_us

    @property
    def root(self) -> Span:
        span = self
        while span.parent is not None:
            span = span.parent
        return span

    def touch(self, timestamp_us: int) -> None:
        span: Span | None = self
        while span is not None:
            span.latest_us = max(span.latest_us, timestamp_us)
            span = span.parent

    def close(self, event: Event) -> None:
        self.end = event
        self.end_us = max(event.timestamp_us, self.start_us)
        self.touch(event.timestamp_us)

    def ended_before(self, timestamp_us: int) -> bool:
        return self.end_us is not None and self.end_us < timestamp_us

    def fail(self, error_type: str, message: str) -> None:
        self.status_code = STATUS_CODE_ERROR
        self.status_message = message
        self.attributes["error.type"] = error_type

    def add_event(self, name: str, event: Event, attributes: dict[str, AttributeValue | None]) -> None:
        self.events.append({
            "timeUnixNano": str(event.timestamp_us * 1000),
            "name": name,
            "attributes": attribute_list(attributes),
        })
        self.touch(event.timestamp_us)

    def add_link(self, trace_id: str, cause: Span, cause_event: Event) -> None:
        self.links.append({
            "traceId": trace_id,
            "spanId": cause.span_id,
            "attributes": attribute_list({
                "metis.link.kind": "caused_by",
                "metis.cause.event_type": cause_event.type,
                "metis.cause.event_id": cause_event.id,
            }),
        })

    def finish(self, end_us: int, *, incomplete: bool) -> None:
        """End a span no event closed; `incomplete` marks that its end time is inferred."""
        self.end_us = max(end_us, self.start_us)
        if incomplete:
            self.attributes["metis.span.incomplete"] = True

    def to_otlp(self, trace_id: str) -> dict[str, Any]:
        end_us = self.end_us if self.end_us is not None else self.latest_us
        status: dict[str, Any] = {"code": self.status_code}
        if self.status_message:
            status["message"] = self.status_message
        span: dict[str, Any] = {"traceId": trace_id, "spanId": self.span_id}
        if self.parent is not None:
            span["parentSpanId"] = self.parent.span_id
        span.update({
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": str(self.start_us * 1000),
            "endTimeUnixNano": str(end_us * 1000),
            "attributes": attribute_list(self.attributes),
            "events": self.events,
            "links": self.links,
            "status": status,
        })
        return span
