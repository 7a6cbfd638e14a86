"""llm.output_* structured-output steps as OpenWOP `envelope.*` run events (RFC 0032 §B).

The node is the model call the step follows (its llm.call_completed or llm.call_started parent).
Refusal text is conversation content (the event's floor is private): it is exported only with
`include_content`, else null, which OpenWOP replay consumers must accept.
"""

from __future__ import annotations

from typing import Any

from metis_core.events.envelope import Event

ENVELOPE_TYPES = {
    "llm.output_retried": "envelope.retry.attempted",
    "llm.output_exhausted": "envelope.retry.exhausted",
    "llm.output_refused": "envelope.refusal",
    "llm.output_truncated": "envelope.truncated",
    "llm.output_nl_to_format": "envelope.nlToFormat.engaged",
    "llm.output_recovered": "envelope.recovery.applied",
}


def envelope_payload(event: Event, node_id: str, *, include_content: bool) -> dict[str, Any]:
    """The payload of `event`'s envelope.* document (ENVELOPE_TYPES[event.type])."""
    p = event.payload
    model = str(p["model"]).partition(":")[2] or str(p["model"])
    kind = event.type
    if kind == "llm.output_retried":
        return {"nodeId": node_id, "attempt": p["attempt"], "reason": p["reason"],
                "previousError": p.get("previous_error")}
    if kind == "llm.output_exhausted":
        return {"nodeId": node_id, "totalAttempts": p["total_attempts"], "finalReason": p["final_reason"],
                "finalError": p.get("final_error")}
    if kind == "llm.output_refused":
        return {"nodeId": node_id, "provider": p["provider"], "model": model,
                "refusalText": p.get("refusal_text") if include_content else None,
                "safetyCategory": p.get("safety_category")}
    if kind == "llm.output_truncated":
        return {"nodeId": node_id, "provider": p["provider"], "model": model, "stopReason": p["stop_reason"],
                "partialPayloadAvailable": p.get("partial_payload_available", False),
                "outputTokenCount": p.get("output_tokens")}
    if kind == "llm.output_nl_to_format":
        return {"nodeId": node_id, "originalEnvelopeType": p["output_name"],
                "fallbackCalls": p.get("fallback_calls", 1)}
    return {"nodeId": node_id, "path": p["path"], "byteOffset": p.get("byte_offset")}
