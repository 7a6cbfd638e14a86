"""A session's turns as OpenWOP run events (RunEventDoc, OpenWOP v1 / payloads 1.4.0), JSON Lines.

One run per turn, `runId` = the turn id: an OpenWOP run is over once it is completed, failed or
cancelled, and a metis session goes on after each of those. Every LLM call is a node (a fallback
attempt retries the same node), its composed system prompt prompt.composed (hashes only), tool
calls agent.toolCalled/toolReturned, routing agent.decided, a replay's turn.replay_diverged
replay.diverged (sourceRunId = the original turn). A refused call is envelope.refusal and
node.failed `envelope_refusal` (RFC 0032 §B.3); the other structured-output steps (llm.output_*)
are envelope.* on their call's node (openwop_envelope.py). Thinking, delegation, refused swaps, the
prompt's source and a replay that differs at a refusal are the agent's acts (openwop_acts.py); a
worker session's runs name their planner's run as `parentRunId`. Sequences start at 0 per run.
Events without a counterpart are skipped and counted.
"""

from __future__ import annotations

from typing import Any

from metis_core import __version__
from metis_core.events.envelope import Event
from metis_core.events.redaction import redact
from metis_core.export import openwop_acts as acts
from metis_core.export.message_rendering import tool_result_text
from metis_core.export.openwop_envelope import ENVELOPE_TYPES, envelope_payload
from metis_core.export.options import ExportOptions
from metis_core.export.otlp_json import trace_id_for_session
from metis_core.export.output import ExportTarget, jsonl_bytes, write_output
from metis_core.export.session_recording import SessionRecording, TurnEvents, load_recording
from metis_core.export.summary import ExportSummary
from metis_core.messages import Message, Role
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

WORKFLOW_ID = "metis.agent-turn"
NODE_TYPE_ID = "metis.llm.chat"
ENGINE_VERSION = f"metis-core/{__version__}"
RETRYABLE_ERRORS = frozenset({"rate_limit", "server_error", "network"})
MISSING_CAPABILITY = {
    "no_vision_support": "vision",
    "exceeds_context_window": "context-window",
    "no_tool_support": "tools",
    "no_system_prompt_support": "system-prompt",
    "no_structured_output_support": "structured-output",
}
"""Routing validation failures that are capabilities; provider_unavailable/not_configured are not."""
DIVERGENCE_POINTS = {
    "tool_call": "agent.toolCalled", "text": "node.completed", "structured_output": "node.completed",
    "error": "node.failed",
}
"""turn.replay_diverged points as the RunEventType of the document that differs (RFC 0027 §F)."""


def _timestamp(event: Event) -> str:
    return event.timestamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _duration_ms(start: Event | None, end: Event) -> int:
    return max(0, (end.timestamp_us - start.timestamp_us) // 1000) if start is not None else 0


def _error(code: str, message: str | None, *, retryable: bool) -> dict[str, Any]:
    return {"code": code, "message": message or code, "retryable": retryable}


class _RunBuilder:
    """The documents of one run (one turn), in event order."""

    def __init__(self, recording: SessionRecording, turn: TurnEvents, options: ExportOptions,
                 refused_swaps: list[Event] | None = None) -> None:
        assert turn.started is not None
        self.refused_swaps = refused_swaps or []
        """Model swaps refused before this turn (no turn of their own): placed after run.started."""
        self.worker_tiers: dict[str, str] = {}
        self.rec, self.turn, self.options = recording, turn, options
        self.started = turn.started
        self.agent = options.agent_name
        self.docs: list[dict[str, Any]] = []
        self.doc_of: dict[str, str] = {}
        self.nodes: dict[str, tuple[str, int]] = {}
        self.steps = 0
        self.tool_names: dict[str, str] = {}
        self.last_failure: tuple[str, dict[str, Any]] | None = None

    def add(self, event: Event, run_type: str, payload: dict[str, Any], *, suffix: str = "",
            node_id: str | None = None) -> None:
        doc: dict[str, Any] = {
            "eventId": event.id + suffix, "runId": self.turn.turn_id, "type": run_type, "payload": payload,
            "timestamp": _timestamp(event), "sequence": len(self.docs), "engineVersion": ENGINE_VERSION,
        }
        if node_id is not None:
            doc["nodeId"] = node_id
        cause = event.id if suffix and event.id in self.doc_of else self._cause(event)
        if cause is not None:
            doc["causationId"] = cause
        self.docs.append(doc)
        self.doc_of.setdefault(event.id, doc["eventId"])

    def _cause(self, event: Event) -> str | None:
        for ancestor in self.rec.ancestors(event):
            if ancestor.id in self.doc_of:
                return self.doc_of[ancestor.id]
        return None

    def handle(self, event: Event) -> bool:
        handler = {
            "turn.started": self._run_started, "route.decided": self._route_decided,
            "llm.call_started": self._node_started, "llm.call_completed": self._node_completed,
            "llm.call_failed": self._node_failed, "tool.called": self._tool_called,
            "tool.completed": self._tool_returned, "tool.failed": self._tool_returned,
            "turn.completed": self._run_finished, "turn.cancelled": self._run_cancelled,
            "llm.prompt_composed": self._prompt_composed,
            "turn.replay_diverged": self._replay_diverged,
            "delegate.started": self._handoff_out, "delegate.completed": self._handoff_back,
            "delegate.failed": self._handoff_back,
        }.get(event.type) or (self._envelope if event.type in ENVELOPE_TYPES else None)
        if handler is None or (event.type == "turn.started" and event is not self.started):
            return False
        return handler(event)

    # --- the run ---------------------------------------------------------------------------

    def _run_started(self, event: Event) -> bool:
        p = event.payload
        inputs: dict[str, Any] = {
            "userMessageHash": p["user_message_hash"], "estimatedInputTokens": p["estimated_input_tokens"],
            "hasImages": p["has_images"], "hasToolCallsInHistory": p["has_tool_calls_in_history"],
        }
        user = self.rec.messages.user_message_before(event.id)
        if self.options.include_content and user is not None:
            inputs["userMessage"] = user.text()
        payload: dict[str, Any] = {
            "workflowId": WORKFLOW_ID, "inputs": inputs, "engineVersion": ENGINE_VERSION, "tags": ["metis"],
            "metadata": {"sessionId": self.rec.session_id, "turnId": self.turn.turn_id,
                         "traceId": trace_id_for_session(self.rec.session_id)},
        }
        if self.rec.parent_run_id is not None:  # a delegated worker's run: its planner's run started it
            payload["parentRunId"] = self.rec.parent_run_id
            payload["metadata"]["parentSessionId"] = self.rec.session.parent_session_id
        self.add(event, "run.started", payload)
        for swap in self.refused_swaps:
            self.add(swap, "model.capability.insufficient", acts.capability_insufficient(swap, "llm-call-1"),
                     node_id="llm-call-1")
        return True

    def _run_finished(self, event: Event) -> bool:
        p = event.payload
        duration = _duration_ms(self.started, event)
        error = (p.get("signals_extra") or {}).get("error")
        if error:
            code = self.last_failure[1]["code"] if self.last_failure else "turn_failed"
            payload: dict[str, Any] = {"error": _error(code, str(error), retryable=False), "durationMs": duration}
            if self.last_failure is not None:
                payload["failedNodeId"] = self.last_failure[0]
            self.add(event, "run.failed", payload)
            return True
        outputs: dict[str, Any] = {
            "stopReason": p["stop_reason"], "llmCallCount": p["llm_call_count"], "toolCallCount": p["tool_call_count"],
            "totalInputTokens": p["total_input_tokens"], "totalOutputTokens": p["total_output_tokens"],
            "totalCostUsd": p["total_cost_usd"],
        }
        unpriced = (p.get("signals_extra") or {}).get("unpriced_calls")
        if unpriced:  # the total leaves those calls out: a lower bound, or unknown (omitted) when nothing was priced
            outputs["unpricedCalls"] = unpriced
            if not p["total_cost_usd"]:
                del outputs["totalCostUsd"]
        answer = self.rec.messages.last_between(self.started.id, event.id, Role.ASSISTANT)
        if self.options.include_content and answer is not None:
            outputs["answer"] = answer.text()
        self.add(event, "run.completed", {"outputs": outputs, "durationMs": duration})
        return True

    def _run_cancelled(self, event: Event) -> bool:
        p = event.payload
        reason = str(p["reason"])
        self.add(event, "run.cancelled", {
            "reason": reason, "cancelledBy": "user" if reason == "user_cancel" else "system",
            "durationMs": _duration_ms(self.started, event),
            "partialLlmCalls": p["partial_llm_calls"], "partialToolCalls": p["partial_tool_calls"],
        })
        return True

    def _route_decided(self, event: Event) -> bool:
        p = event.payload
        chain: list[dict[str, Any]] = p["chain"]
        winner = chain[p["winner_index"]] if 0 <= p["winner_index"] < len(chain) else {}
        decision = {
            "kind": "route", "chosenModel": p["chosen_model"], "policy": winner.get("policy"),
            "reason": winner.get("reason"), "ruleName": winner.get("rule_name"), "elapsedMs": p["elapsed_ms"],
            "chain": [{"policy": e["policy"], "verdict": e["verdict"], "candidateModel": e.get("candidate_model"),
                       "validationFailure": e.get("validation_failure")} for e in chain],
        }
        payload: dict[str, Any] = {"agentId": self.agent, "decision": decision}
        if winner.get("confidence") is not None:
            payload["confidence"] = winner["confidence"]
        self.add(event, "agent.decided", payload)
        substituted = self._substitution(chain, str(p["chosen_model"]))
        if substituted is not None:
            self.add(event, "model.capability.substituted", substituted, suffix="-substituted")
        return True

    def _substitution(self, chain: list[dict[str, Any]], chosen: str) -> dict[str, Any] | None:
        """A candidate rejected for a missing capability, then another model chosen instead."""
        rejected = [e for e in chain if e["verdict"] == "rejected" and e.get("validation_failure") in MISSING_CAPABILITY
                    and e.get("candidate_model") and e["candidate_model"] != chosen]
        if not rejected:
            return None
        original = str(rejected[0]["candidate_model"])
        missing = list(dict.fromkeys(MISSING_CAPABILITY[e["validation_failure"]] for e in rejected
                                     if e["candidate_model"] == original))
        return {
            "nodeId": f"llm-call-{self.steps + 1}",
            "originalProvider": original.partition(":")[0], "originalModel": original.partition(":")[2],
            "fallbackProvider": chosen.partition(":")[0], "fallbackModel": chosen.partition(":")[2],
            "missingCapabilities": missing,
        }

    def _replay_diverged(self, event: Event) -> bool:
        """`atSequence` / `originalEventId`: the original run's document the replay differs from (the
        model call index when the original's trace did not have it)."""
        p = event.payload
        if p["divergence_point"] == "refusal":
            refused = any(d["type"] == "envelope.refusal" for d in self.docs)
            self.add(event, "replay.divergedAtRefusal", acts.diverged_at_refusal(event, refused))
            return True
        at = p.get("original_sequence")
        payload: dict[str, Any] = {
            "sourceRunId": p["source_turn_id"], "atSequence": at if at is not None else p["step"],
            "divergenceKind": p["divergence_kind"],
            "divergencePoint": DIVERGENCE_POINTS[p["divergence_point"]], "nodeId": f"llm-call-{p['step'] + 1}",
            "sourceSessionId": p["source_session_id"], "turnIndex": p["turn_index"],
            "originalModel": p["original_model"], "replayModel": p["replay_model"], "detail": p["detail"],
        }
        if p.get("text_similarity") is not None:
            payload["textSimilarity"] = p["text_similarity"]
        if p.get("original_event_id"):
            payload["originalEventId"] = p["original_event_id"]
        self.add(event, "replay.diverged", payload)
        return True

    # --- delegation ------------------------------------------------------------------------

    def _handoff_out(self, event: Event) -> bool:
        self.worker_tiers[str(event.payload["tool_use_id"])] = str(event.payload["tier"])
        self.add(event, "agent.handoff", acts.handoff_out(self.agent, event))
        return True

    def _handoff_back(self, event: Event) -> bool:
        tier = self.worker_tiers.get(str(event.payload["tool_use_id"]))
        self.add(event, "agent.handoff", acts.handoff_back(self.agent, event, tier))
        return True

    # --- model calls as nodes --------------------------------------------------------------

    def _node_started(self, event: Event) -> bool:
        cause = self.rec.event(event.parent_event_id)
        previous = self.nodes.get(cause.parent_event_id or "") if cause and cause.type == "llm.call_failed" else None
        if previous is not None:
            node_id, attempt = previous[0], previous[1] + 1
        else:
            self.steps += 1
            node_id, attempt = f"llm-call-{self.steps}", 0
        self.nodes[event.id] = (node_id, attempt)
        self.add(event, "node.started", {"nodeId": node_id, "typeId": NODE_TYPE_ID, "attempt": attempt,
                                         "model": event.payload["model"]}, node_id=node_id)
        return True

    def _node_of(self, event: Event) -> tuple[str, int, Event] | None:
        started = self.rec.event(event.parent_event_id)
        if started is None or started.id not in self.nodes:
            return None
        node_id, attempt = self.nodes[started.id]
        return node_id, attempt, started

    def _node_completed(self, event: Event) -> bool:
        node = self._node_of(event)
        if node is None:
            return False
        node_id, attempt, started = node
        p = event.payload
        message = self.rec.messages.last_between(started.id, event.id, Role.ASSISTANT)
        if p["stop_reason"] == "refusal":
            self._refusal(event, node_id, attempt, message)
        else:
            outputs: dict[str, Any] = {"model": p["model"], "stopReason": p["stop_reason"],
                                       "producedToolCalls": p["produced_tool_calls"]}
            if self.options.include_content and message is not None:
                outputs["text"] = message.text()
            self.add(event, "node.completed", {"nodeId": node_id, "outputs": outputs,
                                               "durationMs": _duration_ms(started, event)}, node_id=node_id)
        thought = acts.reasoned(self.agent, node_id, message, include_content=self.options.include_content) \
            if message is not None else None
        if thought is not None:
            self.add(event, "agent.reasoned", thought, suffix="-reasoned", node_id=node_id)
        input_tokens = p["input_tokens"] + p["cached_input_tokens"] + p["cache_creation_input_tokens"]
        usage: dict[str, Any] = {
            "provider": p["provider"], "model": str(p["model"]).partition(":")[2] or p["model"],
            "inputTokens": input_tokens, "outputTokens": p["output_tokens"],
            "totalTokens": input_tokens + p["output_tokens"],
        }
        if p["pricing_version"] != "unpriced":  # OpenWOP: omit when no rate is known rather than emit 0
            usage["costEstimateUsd"] = p["cost_usd"]
        usage.update({"nodeId": node_id, "traceId": trace_id_for_session(self.rec.session_id)})
        self.add(event, "provider.usage", usage, suffix="-usage", node_id=node_id)
        return True

    def _refusal(self, event: Event, node_id: str, attempt: int, message: Message | None) -> None:
        """envelope.refusal, then the node fails with envelope_refusal (not retryable)."""
        p = event.payload
        raw = (message.metadata.provider_raw if message is not None else None) or {}
        details = raw.get("stop_details")  # Anthropic's refusal details: a category, when it gives one
        category = details.get("category") if isinstance(details, dict) else None
        text = redact(message.text()) if self.options.include_content and message is not None else None
        self.add(event, "envelope.refusal", {
            "nodeId": node_id, "provider": str(p["provider"]), "model": str(p["model"]),
            "refusalText": text or None, "safetyCategory": category if isinstance(category, str) else None,
        }, suffix="-refusal", node_id=node_id)
        error = _error("envelope_refusal", f"{p['model']} refused to answer", retryable=False)
        self.last_failure = (node_id, error)
        self.add(event, "node.failed", {"nodeId": node_id, "error": error, "attempts": attempt + 1}, node_id=node_id)

    def _prompt_composed(self, event: Event) -> bool:
        """RFC 0027 prompt.composed, `observability: hashed`: refs, hashes and trust, never the body."""
        node = self._node_of(event)
        if node is None:
            return False
        node_id = node[0]
        p = event.payload
        refs = [part["ref"] for part in p["parts"] if part["ref"] is not None]
        self.add(event, "agent.promptResolved", acts.prompt_resolved(event, node_id), suffix="-resolved",
                 node_id=node_id)
        self.add(event, "prompt.composed", {
            "nodeId": node_id, "refs": list(dict.fromkeys(refs)), "kind": p["kind"], "hash": f"sha256:{p['hash']}",
            "variableHashes": {name: f"sha256:{value}" for name, value in p["variable_hashes"].items()},
            "contentTrust": p["content_trust"],
        }, node_id=node_id)
        return True

    def _node_failed(self, event: Event) -> bool:
        node = self._node_of(event)
        if node is None:
            return False
        node_id, attempt, _ = node
        p = event.payload
        error = _error(str(p["error_class"]), p.get("error_message_redacted"),
                       retryable=p["error_class"] in RETRYABLE_ERRORS)
        self.last_failure = (node_id, error)
        self.add(event, "node.failed", {"nodeId": node_id, "error": error, "attempts": attempt + 1}, node_id=node_id)
        return True

    def _envelope(self, event: Event) -> bool:
        """A structured-output step, on the node of the model call it follows."""
        call = self.rec.event(event.parent_event_id)
        if call is not None and call.type == "llm.call_completed":
            if event.type == "llm.output_refused" and call.payload["stop_reason"] == "refusal":
                return self._fill_refusal(call, event)
            call = self.rec.event(call.parent_event_id)
        if call is None or call.id not in self.nodes:
            return False
        node_id = self.nodes[call.id][0]
        payload = envelope_payload(event, node_id, include_content=self.options.include_content)
        self.add(event, ENVELOPE_TYPES[event.type], payload, node_id=node_id)
        return True

    def _fill_refusal(self, call: Event, refused: Event) -> bool:
        """The call's own envelope.refusal stands for llm.output_refused; a structured turn keeps no
        refused message, so what the step recorded fills the fields the message would have given."""
        doc = next((d for d in self.docs if d["eventId"] == call.id + "-refusal"), None)
        if doc is None:
            return False
        filled = envelope_payload(refused, doc["nodeId"], include_content=self.options.include_content)
        for key in ("refusalText", "safetyCategory"):
            if doc["payload"].get(key) is None:
                doc["payload"][key] = filled[key]
        return True

    # --- tools -----------------------------------------------------------------------------

    def _tool_called(self, event: Event) -> bool:
        p = event.payload
        call_id, name = str(p["tool_use_id"]), str(p["tool_name"])
        self.tool_names[call_id] = name
        use = self.rec.messages.tool_use(call_id)
        inputs: Any = {"inputHash": p["input_hash"], "inputSizeBytes": p["input_size_bytes"]}
        if self.options.include_content and use is not None:
            inputs = use.input
        self.add(event, "agent.toolCalled", {"agentId": self.agent, "toolName": name, "callId": call_id,
                                             "inputs": inputs, "sideEffects": p["side_effects"]})
        return True

    def _tool_returned(self, event: Event) -> bool:
        p = event.payload
        call_id = str(p["tool_use_id"])
        use = self.rec.messages.tool_use(call_id)
        name = self.tool_names.get(call_id) or (use.name if use is not None else None)
        if name is None:
            return False
        payload: dict[str, Any] = {"agentId": self.agent, "toolName": name, "callId": call_id}
        if event.type == "tool.failed":
            message = p["error_message"] if self.options.include_content else None
            payload["error"] = _error(str(p["error_class"]), message, retryable=False)
        else:
            outcome: dict[str, Any] = {"success": p["success"], "outputSizeBytes": p["output_size_bytes"],
                                       "latencyMs": p["latency_ms"]}
            result = self.rec.messages.tool_result(call_id)
            if self.options.include_content:
                outcome.update({"result": tool_result_text(result) if result is not None else None,
                                "filesModified": p.get("files_modified"),
                                "commandExecuted": p.get("command_executed")})
            payload["outcome"] = outcome
        self.add(event, "agent.toolReturned", payload)
        return True


def openwop_documents(
    recording: SessionRecording, options: ExportOptions | None = None
) -> tuple[list[dict[str, Any]], ExportSummary]:
    """Every run's RunEventDocs, run after run in the order the turns started, and a summary."""
    options = options or ExportOptions()
    summary = ExportSummary("openwop", recording.session_id, events_read=len(recording.events))
    documents: list[dict[str, Any]] = []
    in_runs: set[str] = set()
    swaps = [e for e in recording.events if e.type == "routing.constraint_failure" and e.turn_id is None]
    for turn in recording.turns():
        if turn.started is None:
            continue  # no run.started to open the run with (pruned by retention): skipped below
        before = [e for e in swaps if e.id < turn.started.id]
        swaps = [e for e in swaps if e.id > turn.started.id]
        in_runs.update(e.id for e in before)
        run = _RunBuilder(recording, turn, options, before)
        for event in turn.events:
            if run.handle(event):
                in_runs.add(event.id)
        documents.extend(run.docs)
    for event in recording.events:
        if event.id in in_runs:
            summary.exported += 1
        else:
            summary.skip(event.type)
    summary.documents = len(documents)
    return documents, summary


def export_openwop(
    session_id: str,
    sessions: SessionStore,
    trace: TraceStore,
    out: ExportTarget,
    options: ExportOptions | None = None,
) -> ExportSummary:
    """Write one session's runs as OpenWOP RunEventDocs, one JSON document per line."""
    documents, summary = openwop_documents(load_recording(session_id, sessions, trace), options)
    summary.path = write_output(jsonl_bytes(documents), out)
    return summary
