"""OTel GenAI client metrics of a recorded session (OTLP/JSON): token usage and call duration
histograms and the cost sum, computed from the session's call events, in the OTLP JSON encoding."""

from __future__ import annotations

import bisect
from collections import defaultdict
from decimal import Decimal
from typing import Any

import pytest

from metis_core.export import SessionRecording, otel_metrics_request
from metis_core.export.otel_metrics import DURATION_BOUNDS, TOKEN_BOUNDS

from .conftest import by_type
from .test_otel_genai import attrs


def metrics_by_name(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (resource,) = request["resourceMetrics"]
    (scope,) = resource["scopeMetrics"]
    return {metric["name"]: metric for metric in scope["metrics"]}


def test_token_usage_duration_and_cost_match_the_call_events(recording: SessionRecording) -> None:
    request, summary = otel_metrics_request(recording)
    metrics = metrics_by_name(request)
    assert set(metrics) == {"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "metis.llm.cost"}
    completed = by_type(recording.events, "llm.call_completed")
    failed = by_type(recording.events, "llm.call_failed")
    assert completed and failed  # the recorded session has a fallback: failed calls, then an answer
    expected: dict[tuple[str, str], list[int]] = defaultdict(list)
    for event in completed:
        p = event.payload
        model = p["model"].partition(":")[2]
        expected[(model, "input")].append(p["input_tokens"] + p.get("cached_input_tokens", 0)
                                          + p.get("cache_creation_input_tokens", 0))
        expected[(model, "output")].append(p["output_tokens"])
    usage = metrics["gen_ai.client.token.usage"]
    assert usage["unit"] == "{token}" and usage["histogram"]["aggregationTemporality"] == 1
    found = {}
    for point in usage["histogram"]["dataPoints"]:
        labels = attrs(point)
        assert labels["gen_ai.operation.name"] == "chat" and labels["gen_ai.provider.name"]
        values = expected[(labels["gen_ai.request.model"], labels["gen_ai.token.type"])]
        found[(labels["gen_ai.request.model"], labels["gen_ai.token.type"])] = True
        assert point["count"] == str(len(values)) and point["sum"] == sum(values)
        buckets = [0] * (len(TOKEN_BOUNDS) + 1)
        for value in values:
            buckets[bisect.bisect_left(TOKEN_BOUNDS, value)] += 1
        assert point["bucketCounts"] == [str(b) for b in buckets] and point["explicitBounds"] == list(TOKEN_BOUNDS)
        assert point["startTimeUnixNano"].isdigit() and point["startTimeUnixNano"] <= point["timeUnixNano"]
    assert set(found) == set(expected)
    durations = metrics["gen_ai.client.operation.duration"]["histogram"]["dataPoints"]
    errors = sorted(attrs(p)["error.type"] for p in durations if "error.type" in attrs(p)
                    for _ in range(int(p["count"])))
    assert errors == sorted(e.payload["error_class"] for e in failed)
    assert sum(int(p["count"]) for p in durations) == len(completed) + len(failed)
    assert all(p["explicitBounds"] == list(DURATION_BOUNDS) for p in durations)
    priced = [Decimal(str(e.payload["cost_usd"])) for e in completed if e.payload.get("pricing_version") != "unpriced"]
    cost = metrics["metis.llm.cost"]["sum"]
    assert cost["isMonotonic"] and sum(p["asDouble"] for p in cost["dataPoints"]) == pytest.approx(float(sum(priced)))
    assert summary.exported == len(completed) + len(failed)
    assert summary.exported + summary.skipped_total == summary.events_read
    (resource,) = request["resourceMetrics"]
    assert attrs(resource["resource"])["metis.session.id"] == recording.session_id
