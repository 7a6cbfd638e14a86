"""The console's figures over time, computed from stored events: usage and spend, gateway operations
(requests/s, error rate, latency percentiles) and quality (feedback, eval verdicts, routing decisions).

Spend is added up by `CallSpend` (messages/call_spend.py): a call without a price is counted as
unpriced, never as free. Every function takes events already read for one date range.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from metis_core.events.envelope import Event
from metis_core.messages.call_spend import CallSpend
from metis_core.messages.metadata import Usage

BUCKETS = {"day": 86_400, "hour": 3_600}
GROUPS = {"model": "model", "provider": "provider", "key": "gateway_key_id", "user": "user_id", "team": "team_id"}
UNKNOWN = "(none)"
"""The group of calls that carry no key, user or team (a local `metis run`)."""


def bucket_of(when: datetime, bucket: str) -> str:
    return when.strftime("%Y-%m-%d" if bucket == "day" else "%Y-%m-%dT%H:00Z")


def _usage(payload: dict[str, Any]) -> Usage:
    priced = payload.get("pricing_version") != "unpriced"
    return Usage(input_tokens=int(payload.get("input_tokens") or 0),
                 output_tokens=int(payload.get("output_tokens") or 0),
                 cost_usd=Decimal(str(payload.get("cost_usd", 0))) if priced else None,
                 latency_ms=int(payload.get("latency_ms") or 0))


def _spend_json(spend: CallSpend) -> dict[str, Any]:
    usage = spend.usage
    cost = None if usage is None or usage.cost_usd is None else format(usage.cost_usd, "f")
    return {"calls": spend.calls, "input_tokens": usage.input_tokens if usage else 0,
            "output_tokens": usage.output_tokens if usage else 0, "cost_usd": cost, "unpriced_calls": spend.unpriced}


def usage_over_time(calls: list[Event], bucket: str, by: str) -> dict[str, Any]:
    """llm.call_completed events summed per bucket and group, per group, and in all."""
    series: dict[tuple[str, str], CallSpend] = defaultdict(CallSpend)
    groups: dict[str, CallSpend] = defaultdict(CallSpend)
    total = CallSpend()
    for event in calls:
        p = event.payload
        usage = _usage(p)
        key = str(p.get(GROUPS[by]) or UNKNOWN)
        for spend in (series[(bucket_of(event.timestamp, bucket), key)], groups[key], total):
            spend.add(usage)
    return {"bucket": bucket, "by": by, "total": _spend_json(total),
            "groups": [{"key": k, **_spend_json(s)} for k, s in sorted(groups.items())],
            "series": [{"bucket": b, "key": k, **_spend_json(s)} for (b, k), s in sorted(series.items())]}


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


def gateway_operations(events: list[Event], bucket: str, gateway_only: bool) -> dict[str, Any]:
    """Requests, errors and latency per bucket and provider/model from llm.call_completed and
    llm.call_failed; `gateway_only` keeps the sessions a gateway served (a call with an inbound shape)."""
    gateway_sessions = {e.session_id for e in events
                        if e.type == "llm.call_completed" and e.payload.get("inbound_shape")}
    series: dict[tuple[str, str], _Ops] = defaultdict(_Ops)
    totals: dict[str, _Ops] = defaultdict(_Ops)
    health: list[dict[str, Any]] = []
    refusals: list[dict[str, Any]] = []
    for event in events:
        if event.type.startswith("routing.provider_"):
            health.append({"time": event.timestamp.isoformat(), "type": event.type, **event.payload})
            continue
        if event.type == "gateway.quota_exceeded":
            refusals.append({"time": event.timestamp.isoformat(), **event.payload})
            continue
        if gateway_only and event.session_id not in gateway_sessions:
            continue
        p = event.payload
        name = f"{p.get('provider')} · {p.get('model')}"
        for ops in (series[(bucket_of(event.timestamp, bucket), name)], totals[name]):
            ops.requests += 1
            ops.errors += event.type == "llm.call_failed"
            if event.type == "llm.call_completed":
                ops.latencies.append(int(p.get("latency_ms") or 0))
    span = BUCKETS[bucket]
    buckets = {b for b, _ in series}
    return {"bucket": bucket, "gateway_only": gateway_only,
            "models": [{"key": k, **o.json(span * max(1, len(buckets)))} for k, o in sorted(totals.items())],
            "series": [{"bucket": b, "key": k, **o.json(span)} for (b, k), o in sorted(series.items())],
            "health": health, "quota_refusals": refusals}


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
