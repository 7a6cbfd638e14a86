"""The console's figures over time, computed from stored events: usage and spend, gateway operations
(requests/s, error rate, latency percentiles) and quality (feedback, eval verdicts, routing decisions).

Calls come as plain rows (trace/call_rows.py); a call without a price (`pricing_version`
"unpriced", the rule of messages/call_spend.py) is counted as unpriced, never as free, and priced
costs are summed as Decimals. Every function takes what was read for one date range.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from metis_core.events.envelope import Event
from metis_core.store.records import from_us
from metis_core.trace.call_rows import CallRow

BUCKETS = {"day": 86_400, "hour": 3_600}
GROUPS = {"model": "model", "provider": "provider", "key": "gateway_key_id", "user": "user_id", "team": "team_id"}
UNKNOWN = "(none)"
"""The group of calls that carry no key, user or team (a local `metis run`)."""


def bucket_of(when: datetime, bucket: str) -> str:
    return when.strftime("%Y-%m-%d" if bucket == "day" else "%Y-%m-%dT%H:00Z")


@dataclass
class _Spend:
    """Calls added up: tokens, the priced calls' cost, and how many calls had no price."""

    calls: int = 0
    unpriced: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)

    def add(self, call: CallRow) -> None:
        self.calls += 1
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        if call.pricing_version == "unpriced" or call.cost_usd is None:
            self.unpriced += 1
        else:
            self.cost += Decimal(call.cost_usd)

    def json(self) -> dict[str, Any]:
        return {"calls": self.calls, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cost_usd": None if self.unpriced == self.calls else format(self.cost, "f"),
                "unpriced_calls": self.unpriced}


class _Buckets:
    """Bucket labels by integer bucket number, each formatted once."""

    def __init__(self, bucket: str) -> None:
        self.bucket, self.width_us, self.labels = bucket, BUCKETS[bucket] * 1_000_000, dict[int, str]()

    def label(self, timestamp_us: int) -> str:
        number = timestamp_us // self.width_us
        found = self.labels.get(number)
        if found is None:
            found = self.labels[number] = bucket_of(from_us(number * self.width_us), self.bucket)
        return found


def usage_over_time(calls: list[CallRow], bucket: str, by: str) -> dict[str, Any]:
    """Completed calls summed per bucket and group, per group, and in all."""
    series: dict[tuple[str, str], _Spend] = defaultdict(_Spend)
    groups: dict[str, _Spend] = defaultdict(_Spend)
    total = _Spend()
    labels, field_name = _Buckets(bucket), GROUPS[by]
    for call in calls:
        key = call.get(field_name) or UNKNOWN
        for spend in (series[(labels.label(call.timestamp_us), key)], groups[key], total):
            spend.add(call)
    return {"bucket": bucket, "by": by, "total": total.json(),
            "groups": [{"key": k, **s.json()} for k, s in sorted(groups.items())],
            "series": [{"bucket": b, "key": k, **s.json()} for (b, k), s in sorted(series.items())]}


USAGE_CSV_COLUMNS = ("bucket", "key", "calls", "input_tokens", "output_tokens", "cost_usd", "unpriced_calls")


def percentile(values: list[int], share: float) -> int | None:
    """The nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * share // 1))
    return ordered[int(rank) - 1]


@dataclass
class _Ops:
    requests: int = 0
    errors: int = 0
    latencies: list[int] = field(default_factory=list)

    def json(self, seconds: int) -> dict[str, Any]:
        return {"requests": self.requests, "errors": self.errors,
                "error_rate": round(self.errors / self.requests, 4) if self.requests else None,
                "requests_per_s": round(self.requests / seconds, 6),
                "p50_ms": percentile(self.latencies, 0.5), "p95_ms": percentile(self.latencies, 0.95)}


def gateway_operations(calls: list[CallRow], events: list[Event], bucket: str, gateway_only: bool) -> dict[str, Any]:
    """Requests, errors and latency per bucket and provider/model from completed and failed calls;
    `gateway_only` keeps the sessions a gateway served (a call with an inbound shape). `events`:
    upstream health and quota refusals, listed as they are."""
    gateway_sessions = {c.session_id for c in calls if c.type == "llm.call_completed" and c.inbound_shape}
    series: dict[tuple[str, str], _Ops] = defaultdict(_Ops)
    totals: dict[str, _Ops] = defaultdict(_Ops)
    labels = _Buckets(bucket)
    for call in calls:
        if gateway_only and call.session_id not in gateway_sessions:
            continue
        name = f"{call.provider} · {call.model}"
        for ops in (series[(labels.label(call.timestamp_us), name)], totals[name]):
            ops.requests += 1
            if call.type == "llm.call_failed":
                ops.errors += 1
            else:
                ops.latencies.append(call.latency_ms)
    span = BUCKETS[bucket]
    buckets = {b for b, _ in series}
    return {"bucket": bucket, "gateway_only": gateway_only,
            "models": [{"key": k, **o.json(span * max(1, len(buckets)))} for k, o in sorted(totals.items())],
            "series": [{"bucket": b, "key": k, **o.json(span)} for (b, k), o in sorted(series.items())],
            "health": [{"time": e.timestamp.isoformat(), "type": e.type, **e.payload} for e in events
                       if e.type.startswith("routing.provider_")],
            "quota_refusals": [{"time": e.timestamp.isoformat(), **e.payload} for e in events
                               if e.type == "gateway.quota_exceeded"]}


def quality(events: list[Event], model_of: dict[str, str], bucket: str) -> dict[str, Any]:
    """Feedback and eval verdicts per session and per model over time, and routing decisions with
    their evidence. `model_of` maps a session to the model that answered it last."""
    sessions: dict[str, dict[str, Any]] = defaultdict(lambda: {"up": 0, "down": 0, "implicit": [], "scores": []})
    per_model: dict[tuple[str, str], list[float]] = defaultdict(list)
    feedback_model: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: {"up": 0, "down": 0})
    decisions: list[dict[str, Any]] = []
    for event in events:
        p, session = event.payload, event.session_id
        model = model_of.get(session, UNKNOWN)
        when = bucket_of(event.timestamp, bucket)
        if event.type == "feedback.explicit":
            side = "up" if p.get("rating") == "thumbs_up" else "down"
            sessions[session][side] += 1
            feedback_model[(when, model)][side] += 1
        elif event.type == "feedback.implicit":
            sessions[session]["implicit"].append(p.get("type"))
        elif event.type == "eval.completed":
            sessions[session]["scores"].append(float(p["score"]))
            per_model[(when, model)].append(float(p["score"]))
        elif event.type in ("route.decided", "pattern.matched"):
            decisions.append({"time": event.timestamp.isoformat(), "session_id": session, "type": event.type,
                              "event_id": event.id, **_decision(p)})
    return {
        "sessions": [{"session_id": s, "model": model_of.get(s), "feedback_up": v["up"], "feedback_down": v["down"],
                      "implicit": v["implicit"], "evals": len(v["scores"]),
                      "mean_score": round(sum(v["scores"]) / len(v["scores"]), 4) if v["scores"] else None}
                     for s, v in sorted(sessions.items())],
        "models": [{"bucket": b, "model": m, "evals": len(scores), "mean_score": round(sum(scores) / len(scores), 4),
                    **feedback_model.get((b, m), {"up": 0, "down": 0})}
                   for (b, m), scores in sorted(per_model.items())]
                  + [{"bucket": b, "model": m, "evals": 0, "mean_score": None, **f}
                     for (b, m), f in sorted(feedback_model.items()) if (b, m) not in per_model],
        "decisions": decisions[-500:],
    }


def _decision(p: dict[str, Any]) -> dict[str, Any]:
    """Which model was chosen, by which policy and why (the chain's reasons, the pattern's evidence)."""
    if "chain" in p:
        chain = p["chain"]
        winner = chain[p.get("winner_index", 0)] if chain else {}
        return {"chosen_model": p.get("chosen_model"), "policy": winner.get("policy"), "reason": winner.get("reason"),
                "confidence": winner.get("confidence"), "alternatives": winner.get("pattern_alternatives") or [],
                "chain": [{"policy": c.get("policy"), "verdict": c.get("verdict"), "reason": c.get("reason")}
                          for c in chain]}
    return {"chosen_model": p.get("chosen_model"), "policy": "pattern", "fingerprint_id": p.get("fingerprint_id"),
            "confidence": p.get("confidence"), "sample_size": p.get("sample_size"),
            "reason": f"{p.get('fingerprint_kind')} fingerprint, {p.get('sample_size')} samples, "
                      f"{p.get('k_cluster_size')} neighbours"}
