"""A session's model calls as OpenTelemetry GenAI client metrics (semantic conventions 1.37), as OTLP/JSON.

Beside the trace export (otel_genai.py): one ExportMetricsServiceRequest per session, delta
temporality over the session's time span. `gen_ai.client.token.usage` and
`gen_ai.client.operation.duration` are histograms with the semconv's advised bucket bounds, one data
point per provider, model and token type (or error type); `metis.llm.cost` sums the priced calls' USD.
It carries no message content, so `include_content` changes nothing.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from metis_core import __version__
from metis_core.events.envelope import Event
from metis_core.export.options import ExportOptions
from metis_core.export.otel_genai import PROVIDER_NAMES, SCHEMA_URL, _int
from metis_core.export.otlp_json import AttributeValue, attribute_list, unix_nanos
from metis_core.export.output import ExportTarget, json_bytes, write_output
from metis_core.export.session_recording import SessionRecording, load_recording
from metis_core.export.summary import ExportSummary
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

SCOPE_NAME = "metis_core.export.otel_metrics"
DELTA = 1
TOKEN_BOUNDS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BOUNDS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
"""The bucket boundaries the GenAI semantic conventions advise for the two client histograms."""

Key = tuple[tuple[str, AttributeValue], ...]


@dataclass
class _Histogram:
    bounds: tuple[float, ...]
    values: list[float] = field(default_factory=list)

    def point(self, attributes: Key, start: str, end: str) -> dict[str, Any]:
        counts = [0] * (len(self.bounds) + 1)
        for value in self.values:  # OTLP buckets are (previous bound, bound]
            counts[bisect.bisect_left(self.bounds, value)] += 1
        return {"attributes": attribute_list(dict(attributes)), "startTimeUnixNano": start, "timeUnixNano": end,
                "count": str(len(self.values)), "sum": sum(self.values), "min": min(self.values),
                "max": max(self.values), "bucketCounts": [str(c) for c in counts], "explicitBounds": list(self.bounds)}


class _MetricsBuilder:
    def __init__(self, recording: SessionRecording, options: ExportOptions) -> None:
        self.rec, self.options = recording, options
        self.tokens: dict[Key, _Histogram] = {}
        self.durations: dict[Key, _Histogram] = {}
        self.costs: dict[Key, Decimal] = {}
        self.summary = ExportSummary("otel-metrics", recording.session_id, events_read=len(recording.events))

    def build(self) -> dict[str, Any]:
        for event in self.rec.events:
            if event.type == "llm.call_completed":
                self._completed(event)
            elif event.type == "llm.call_failed":
                self._failed(event)
            else:
                self.summary.skip(event.type)
                continue
            self.summary.exported += 1
        events = self.rec.events
        start, end = (unix_nanos(events[0]), unix_nanos(events[-1])) if events else ("0", "0")
        metrics = []
        if self.tokens:
            metrics.append(self._histogram("gen_ai.client.token.usage", "{token}",
                                           "Input and output tokens used per model call.", self.tokens, start, end))
        if self.durations:
            metrics.append(self._histogram("gen_ai.client.operation.duration", "s",
                                           "Duration of each model call.", self.durations, start, end))
        if self.costs:
            metrics.append({"name": "metis.llm.cost", "unit": "USD", "description": "Cost of the priced model calls.",
                            "sum": {"aggregationTemporality": DELTA, "isMonotonic": True, "dataPoints": [
                                {"attributes": attribute_list(dict(key)), "startTimeUnixNano": start,
                                 "timeUnixNano": end, "asDouble": float(total)} for key, total in self.costs.items()]}})
        self.summary.documents = sum(len(m.get("histogram", m.get("sum", {}))["dataPoints"]) for m in metrics)
        return {"resourceMetrics": [{
            "resource": {"attributes": attribute_list({
                "service.name": self.options.service_name, "service.version": __version__,
                "metis.session.id": self.rec.session_id,
            })},
            "scopeMetrics": [{"scope": {"name": SCOPE_NAME, "version": __version__}, "metrics": metrics,
                              "schemaUrl": SCHEMA_URL}],
            "schemaUrl": SCHEMA_URL,
        }]}

    def _histogram(self, name: str, unit: str, description: str, series: dict[Key, _Histogram], start: str,
                   end: str) -> dict[str, Any]:
        return {"name": name, "unit": unit, "description": description, "histogram": {
            "aggregationTemporality": DELTA,
            "dataPoints": [histogram.point(key, start, end) for key, histogram in series.items()]}}

    def _base(self, p: dict[str, Any]) -> dict[str, AttributeValue]:
        provider = str(p.get("provider", ""))
        return {"gen_ai.operation.name": "chat", "gen_ai.provider.name": PROVIDER_NAMES.get(provider, provider),
                "gen_ai.request.model": str(p.get("model", "")).partition(":")[2] or str(p.get("model", ""))}

    def _add(self, series: dict[Key, _Histogram], bounds: tuple[float, ...], attributes: dict[str, AttributeValue],
             value: float) -> None:
        key = tuple(sorted(attributes.items()))
        series.setdefault(key, _Histogram(bounds)).values.append(value)

    def _completed(self, event: Event) -> None:
        p, base = event.payload, self._base(event.payload)
        # as in the trace export: the semconv's input count includes cached and cache-written tokens
        inputs = _int(p, "input_tokens") + _int(p, "cached_input_tokens") + _int(p, "cache_creation_input_tokens")
        self._add(self.tokens, TOKEN_BOUNDS, {**base, "gen_ai.token.type": "input"}, inputs)
        self._add(self.tokens, TOKEN_BOUNDS, {**base, "gen_ai.token.type": "output"}, _int(p, "output_tokens"))
        self._add(self.durations, DURATION_BOUNDS, base, _int(p, "latency_ms") / 1000)
        if p.get("pricing_version") != "unpriced" and p.get("cost_usd") is not None:
            key = tuple(sorted(base.items()))
            self.costs[key] = self.costs.get(key, Decimal(0)) + Decimal(str(p["cost_usd"]))

    def _failed(self, event: Event) -> None:
        p = event.payload
        self._add(self.durations, DURATION_BOUNDS, {**self._base(p), "error.type": str(p.get("error_class", ""))},
                  _int(p, "latency_ms") / 1000)


def otel_metrics_request(
    recording: SessionRecording, options: ExportOptions | None = None
) -> tuple[dict[str, Any], ExportSummary]:
    """The ExportMetricsServiceRequest (OTLP/JSON) for a recording, and what went into it."""
    builder = _MetricsBuilder(recording, options or ExportOptions())
    return builder.build(), builder.summary


def export_otel_metrics(
    session_id: str,
    sessions: SessionStore,
    trace: TraceStore,
    out: ExportTarget,
    options: ExportOptions | None = None,
) -> ExportSummary:
    """Write one session's model-call metrics as OTLP/JSON (one JSON document) to a path or stream."""
    request, summary = otel_metrics_request(load_recording(session_id, sessions, trace), options)
    summary.path = write_output(json_bytes(request), out)
    return summary
