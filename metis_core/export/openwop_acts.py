"""The agent's own acts as OpenWOP run events (payloads 1.4.0): thinking as `agent.reasoned`,
delegation as `agent.handoff`, a refused model swap as `model.capability.insufficient`, the system
prompt's source as `agent.promptResolved`, and a replay that differs at a refusal as
`replay.divergedAtRefusal`. Each builds one payload; openwop.py places it in its run.

Thinking is conversation content: without `include_content` an `agent.reasoned` records only that
the model reasoned (`verbosity: off`, a hash and a size), never the text.
"""

from __future__ import annotations

from typing import Any

from metis_core.events.envelope import Event
from metis_core.hashing import sha256_hex
from metis_core.messages import Message, RedactedThinkingBlock, ThinkingBlock

SWAP_CAPABILITIES = {
    "supports_images": "vision", "max_context_tokens": "context-window", "supports_tools": "tools",
    "supports_system_prompt": "system-prompt", "supports_structured_output": "structured-output",
    "supports_thinking": "reasoning",
}
"""A refused swap's missing capability field, as OpenWOP names the capability."""


def reasoned(agent: str, node_id: str, message: Message, *, include_content: bool) -> dict[str, Any] | None:
    """`agent.reasoned` for the thinking of one answer, or None when it did not think."""
    thinking = [b for b in message.content if isinstance(b, ThinkingBlock)]
    redacted = [b for b in message.content if isinstance(b, RedactedThinkingBlock)]
    if not thinking and not redacted:
        return None
    text = "\n\n".join(b.text for b in thinking)
    payload: dict[str, Any] = {
        "agentId": agent, "nodeId": node_id, "verbosity": "full" if include_content else "off",
        "reasoningHash": f"sha256:{sha256_hex(text)}", "reasoningChars": len(text),
        "signed": any(b.signature for b in thinking), "redactedBlocks": len(redacted),
    }
    payload["reasoning"] = text if include_content else ""  # `off`: the decision recorded, no content
    return payload


def worker_agent(agent: str, tier: str) -> str:
    return f"{agent}.worker.{tier}"


def handoff_out(agent: str, event: Event) -> dict[str, Any]:
    """`agent.handoff` planner → worker, from delegate.started."""
    p = event.payload
    return {"fromAgentId": agent, "toAgentId": worker_agent(agent, str(p["tier"])),
            "reason": f"delegated to the {p['tier']} tier", "workerSessionId": p["worker_session_id"],
            "callId": p["tool_use_id"], "model": p["resolved_model"]}


def handoff_back(agent: str, event: Event, tier: str | None) -> dict[str, Any]:
    """`agent.handoff` worker → planner, from delegate.completed or delegate.failed."""
    p = event.payload
    worker = worker_agent(agent, tier or "unknown")
    reason = "the worker finished" if event.type == "delegate.completed" else f"the worker failed: {p['failure_mode']}"
    payload: dict[str, Any] = {"fromAgentId": worker, "toAgentId": agent, "reason": reason, "callId": p["tool_use_id"]}
    if p.get("worker_session_id"):
        payload["workerSessionId"] = p["worker_session_id"]
    return payload


def capability_insufficient(event: Event, node_id: str) -> dict[str, Any]:
    """`model.capability.insufficient` for a refused swap (routing.constraint_failure): the model
    asked for was refused, and no fallback was tried (the session kept its model)."""
    p = event.payload
    model = str(p["candidate_model"])
    missing = SWAP_CAPABILITIES.get(str(p["missing_capability"]), str(p["missing_capability"]))
    return {"nodeId": node_id, "provider": model.partition(":")[0], "model": model.partition(":")[2] or model,
            "missingCapabilities": [missing], "fallbackAttempted": False}


def prompt_resolved(event: Event, node_id: str) -> dict[str, Any]:
    """`agent.promptResolved` (RFC 0029): which layer's prompt applied. A template chosen for the run
    (`metis run -t`) is the run-configurable layer, the configured system prompt the host default."""
    parts = event.payload["parts"]
    template = next((p["ref"] for p in parts if p["kind"] == "template" and p["ref"]), None)
    system = next((p["ref"] for p in parts if p["kind"] == "system" and p["ref"]), None)
    chain: list[dict[str, Any]] = []
    resolved: str | None = None
    for layer, source in (("run-configurable", template), ("host-defaults", system)):
        entry: dict[str, Any] = {"layer": layer, "applied": source is not None and resolved is None}
        if source is not None:
            entry["source"] = source
        if source is None:
            entry["reason"] = "no candidate at this layer"
        elif resolved is not None:
            entry["reason"] = "superseded by a higher layer"
        resolved = resolved or source
        chain.append(entry)
    return {"nodeId": node_id, "kind": "system", "chain": chain, "resolved": resolved}


def diverged_at_refusal(event: Event, replay_refused: bool) -> dict[str, Any]:
    """`replay.divergedAtRefusal` (RFC 0041 §B): one side refused, the other answered."""
    p = event.payload
    at = p.get("original_sequence")
    payload: dict[str, Any] = {
        "sourceRunId": p["source_turn_id"], "atSequence": at if at is not None else p["step"],
        "nodeId": f"llm-call-{p['step'] + 1}",
        "originalEnvelopeKind": "valid" if replay_refused else "refusal",
        "replayEnvelopeKind": "refusal" if replay_refused else "valid",
    }
    if p.get("original_event_id"):
        payload["originalEventId"] = p["original_event_id"]
    return payload
