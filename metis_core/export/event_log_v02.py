"""A session as an agent event log v0.2 (SCHEMA.md): hash-chained JSON Lines of nine entry types.

Built from our events plus the session's canonical messages: MODEL_REQUEST carries the history
stored before the call, MODEL_RESPONSE the assistant message, TOOL_CALL/TOOL_RESULT the blocks.
Content is '[REDACTED]' with its hash unless `include_content`; every `*_hash` field is SHA-256
of the RFC 8785 form of the plaintext value the field would otherwise hold. Chain: event_log_chain.
"""

from __future__ import annotations

import uuid
from typing import Any

from ulid import ULID

from metis_core import __version__
from metis_core.events.envelope import Event
from metis_core.export.event_log_chain import EntryDraft, seal
from metis_core.export.event_log_schemas import REDACTED, REDACTED_OBJECT
from metis_core.export.message_rendering import finish_reason, message_text, tool_result_text
from metis_core.export.options import ExportOptions
from metis_core.export.output import ExportTarget, jsonl_bytes, write_output
from metis_core.export.session_recording import SessionRecording, load_recording
from metis_core.export.summary import ExportSummary
from metis_core.hashing import json_hash
from metis_core.messages import Message, Role
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

FRAMEWORK = "metis-core"
ID_NAMESPACE = uuid.UUID("6f0d5c8e-2a4b-5e7f-9c1d-3b8a7e6f5d40")
"""Namespace of the UUIDv5 ids given to entries that no event produced (a synthesised SESSION_START)."""
SESSION_STATUS = {"completed": "success", "abandoned": "timeout", "error": "failure"}


def entry_uuid(event_id: str) -> str:
    """An event's ULID is 128 bits: written as a UUID it maps back to the event (python-ulid: to_uuid)."""
    try:
        return str(uuid.UUID(bytes=ULID.from_str(event_id).bytes))
    except ValueError:
        return str(uuid.uuid5(ID_NAMESPACE, event_id))


def _timestamp(event: Event) -> str:
    return event.timestamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _model_name(model: str) -> str:
    return model.partition(":")[2] or model


class _LogBuilder:
    def __init__(self, recording: SessionRecording, options: ExportOptions) -> None:
        self.rec, self.options = recording, options
        self.drafts: list[EntryDraft] = []
        self.summary = ExportSummary("eventlog", recording.session_id, events_read=len(recording.events))
        self.tool_names: dict[str, str] = {}
        self.rendered: dict[str, dict[str, Any]] = {}
        created = next((e for e in recording.events if e.type == "session.created"), None)
        self.created = created
        self.policy_version = str(created.payload["routing_policy_version"]) if created is not None else None

    def build(self) -> list[dict[str, Any]]:
        self._session_start()
        handlers = {
            "session.ended": self._session_end, "llm.call_started": self._model_request,
            "llm.call_completed": self._model_response, "llm.call_failed": self._call_error,
            "tool.called": self._tool_call, "tool.completed": self._tool_result, "tool.failed": self._tool_result,
            "tool.input_invalid": self._input_invalid, "route.decided": self._route_decision,
            "tool.confirmation_resolved": self._confirmation_decision, "turn.completed": self._turn_error,
            "turn.cancelled": self._turn_cancelled, "feedback.explicit": self._feedback,
            "routing.constraint_failure": self._swap_refused,
        }
        for event in self.rec.events:
            if event is self.created:
                self.summary.exported += 1
                continue
            handler = handlers.get(event.type)
            if handler is not None and handler(event):
                self.summary.exported += 1
            else:
                self.summary.skip(event.type)
        entries = seal(self.drafts, self.rec.session_id)
        self.summary.documents = len(entries)
        self.summary.head_hash = entries[-1]["entry_hash"] if entries else None
        return entries

    def add(self, event: Event, event_type: str, payload: dict[str, Any]) -> bool:
        self.drafts.append(EntryDraft(event_type, payload, entry_uuid(event.id), _timestamp(event), event.id,
                                      event.turn_id))
        return True

    def withheld(self, value: Any, *, redacted: Any = REDACTED) -> tuple[Any, str]:
        """The value to write and its hash: the plaintext only when content was asked for."""
        return (value if self.options.include_content else redacted), json_hash(value)

    # --- lifecycle -------------------------------------------------------------------------

    def _session_start(self) -> None:
        session = self.rec.session
        system = next((m for m in self.rec.messages.messages if m.role is Role.SYSTEM), None)
        tags = ["metis"]
        if self.created is not None:
            tags.append(f"workspace:{str(self.created.payload['workspace_hash'])[:16]}")
        payload: dict[str, Any] = {
            "agent_id": self.options.agent_name, "tags": tags, "environment": self.options.environment,
            "framework": FRAMEWORK, "framework_version": __version__, "sdk_version": __version__,
        }
        if system is not None:
            payload["system_prompt_hash"] = json_hash(message_text(system))
        if self.created is not None:
            self.add(self.created, "SESSION_START", payload)
            return
        stamp = session.created_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self.drafts.append(EntryDraft("SESSION_START", payload, str(uuid.uuid5(ID_NAMESPACE, f"{session.id}:start")),
                                      stamp, None, None))

    def _session_end(self, event: Event) -> bool:
        p = event.payload
        payload = {
            "status": SESSION_STATUS.get(str(p["disposition"]), "failure"), "reason": str(p["disposition"]),
            "duration_ms": round(float(p["duration_seconds"]) * 1000), "total_cost_usd": p["total_cost_usd"],
        }
        calls = (e for e in self.rec.events if e.type == "llm.call_completed")
        if any(e.payload.get("pricing_version") == "unpriced" for e in calls):
            del payload["total_cost_usd"]  # a call had no price: the total is not known (v0.2 has no lower bound)
        return self.add(event, "SESSION_END", payload)

    def _turn_error(self, event: Event) -> bool:
        error = (event.payload.get("signals_extra") or {}).get("error")
        if not error:
            return False  # a turn that answered has no v0.2 entry of its own
        return self.add(event, "ERROR", {"error_type": "turn_failed", "message": str(error), "fatal": True})

    def _turn_cancelled(self, event: Event) -> bool:
        p = event.payload
        return self.add(event, "ANNOTATION", {
            "annotator_id": self.options.agent_name, "annotation_type": "flag",
            "content": {"flag": "turn_cancelled", "turn_id": event.turn_id, "reason": p["reason"],
                        "partial_llm_calls": p["partial_llm_calls"], "partial_tool_calls": p["partial_tool_calls"]},
        })

    def _feedback(self, event: Event) -> bool:
        p = event.payload
        content = {"rating": p["rating"], "scope": p["scope"], "subject_turn_id": p.get("subject_turn_id"),
                   "subject_session_id": p.get("subject_session_id")}
        if self.options.include_content and p.get("comment"):
            content["comment"] = p["comment"]
        return self.add(event, "ANNOTATION", {"annotator_id": "user", "annotation_type": "rating", "content": content})

    # --- model calls -----------------------------------------------------------------------

    def _message(self, message: Message) -> dict[str, Any]:
        """One history message; cached, since every later request repeats it."""
        cached = self.rendered.get(message.id)
        if cached is not None:
            return cached
        content, content_hash = self.withheld(message_text(message))
        rendered: dict[str, Any] = {"role": message.role.value, "content": content, "content_hash": content_hash}
        if message.role is Role.TOOL:
            names = [self.tool_names.get(r.tool_use_id) for r in message.tool_results()]
            if names and names[0]:
                rendered["name"] = names[0]
        self.rendered[message.id] = rendered
        return rendered

    def _model_request(self, event: Event) -> bool:
        p = event.payload
        return self.add(event, "MODEL_REQUEST", {
            "model": _model_name(str(p["model"])), "provider": str(p["provider"]),
            "messages": [self._message(m) for m in self.rec.messages.before(event.id)],
        })

    def _model_response(self, event: Event) -> bool:
        started = self.rec.event(event.parent_event_id)
        message = self.rec.messages.last_between(started.id, event.id, Role.ASSISTANT) if started else None
        if message is None:
            return False  # without the stored message there is no content or hash to write
        p = event.payload
        content, content_hash = self.withheld(message_text(message))
        prompt = p["input_tokens"] + p["cached_input_tokens"] + p["cache_creation_input_tokens"]
        return self.add(event, "MODEL_RESPONSE", {
            "model": _model_name(str(p["model"])), "content": content, "content_hash": content_hash,
            "role": "assistant", "finish_reason": finish_reason(message.metadata.stop_reason or p["stop_reason"]),
            "usage": {"prompt_tokens": prompt, "completion_tokens": p["output_tokens"],
                      "total_tokens": prompt + p["output_tokens"]},
        })

    def _call_error(self, event: Event) -> bool:
        p = event.payload
        return self.add(event, "ERROR", {
            "error_type": str(p["error_class"]), "message": str(p["error_message_redacted"] or p["error_class"]),
            "fatal": False,
        })

    # --- tools -----------------------------------------------------------------------------

    def _tool_call(self, event: Event) -> bool:
        p = event.payload
        tool_id, name = str(p["tool_use_id"]), str(p["tool_name"])
        self.tool_names[tool_id] = name
        use = self.rec.messages.tool_use(tool_id)
        args: Any = REDACTED_OBJECT
        if self.options.include_content and use is not None:
            args = use.input
        return self.add(event, "TOOL_CALL", {"tool_name": name, "tool_id": tool_id, "args": args,
                                             "args_hash": str(p["input_hash"])})

    def _tool_result(self, event: Event) -> bool:
        p = event.payload
        tool_id = str(p["tool_use_id"])
        use = self.rec.messages.tool_use(tool_id)
        name = self.tool_names.get(tool_id) or (use.name if use is not None else None)
        if name is None:
            return False
        block = self.rec.messages.tool_result(tool_id)
        failed = event.type == "tool.failed" or not p.get("success", True)
        plaintext = tool_result_text(block) if block is not None else str(p.get("error_message") or "")
        result, result_hash = self.withheld(plaintext)
        return self.add(event, "TOOL_RESULT", {
            "tool_name": name, "tool_id": tool_id, "result": result, "result_hash": result_hash,
            "status": "error" if failed else "success", "duration_ms": p["latency_ms"],
        })

    def _input_invalid(self, event: Event) -> bool:
        p = event.payload
        errors: list[str] = list(p["validation_errors"])
        message = f"input for {p['tool_name']} failed its schema ({len(errors)} violations)"
        if self.options.include_content:
            message += ": " + "; ".join(errors)
        return self.add(event, "ERROR", {"error_type": "tool_input_invalid", "message": message, "fatal": False})

    # --- decisions -------------------------------------------------------------------------

    def _route_decision(self, event: Event) -> bool:
        p = event.payload
        chain: list[dict[str, Any]] = p["chain"]
        winner = chain[p["winner_index"]] if 0 <= p["winner_index"] < len(chain) else {}
        payload: dict[str, Any] = {
            "decision_id": entry_uuid(event.id),
            "inputs": {"candidates": [{"policy": e["policy"], "verdict": e["verdict"],
                                       "candidate_model": e.get("candidate_model"),
                                       "validation_failure": e.get("validation_failure")} for e in chain]},
            "outputs": {"chosen_model": p["chosen_model"], "winner_index": p["winner_index"]},
            "justification": f"{winner.get('policy', 'routing')}: {winner.get('reason', 'chosen')}",
        }
        if self.policy_version is not None:
            payload["policy_version"] = self.policy_version
        return self.add(event, "DECISION_TRACE", payload)

    def _swap_refused(self, event: Event) -> bool:
        p = event.payload
        payload: dict[str, Any] = {
            "decision_id": entry_uuid(event.id),
            "inputs": {"action": p["action"], "requested": p["requested"], "candidate_model": p["candidate_model"],
                       "active_model": p["active_model"]},
            "outputs": {"decision": "refused", "validation_failure": p["validation_failure"],
                        "missing_capability": p["missing_capability"], "active_model": p["active_model"]},
            "justification": f"capability check: {p['candidate_model']} lacks {p['missing_capability']}",
        }
        if self.policy_version is not None:
            payload["policy_version"] = self.policy_version
        return self.add(event, "DECISION_TRACE", payload)

    def _confirmation_decision(self, event: Event) -> bool:
        p = event.payload
        tool_id = str(p["tool_use_id"])
        decision = str(p["decision"])
        return self.add(event, "DECISION_TRACE", {
            "decision_id": entry_uuid(event.id),
            "inputs": {"tool_id": tool_id, "tool_name": self.tool_names.get(tool_id),
                       "confirmation_request_id": p["confirmation_request_id"]},
            "outputs": {"decision": decision, "scope": p.get("scope")},
            "justification": "confirmation timed out" if decision == "timeout" else "user answered the confirmation",
        })


def event_log_entries(
    recording: SessionRecording, options: ExportOptions | None = None
) -> tuple[list[dict[str, Any]], ExportSummary]:
    """The sealed, chained log entries of a recording, and a summary with the head hash."""
    builder = _LogBuilder(recording, options or ExportOptions())
    return builder.build(), builder.summary


def export_event_log(
    session_id: str,
    sessions: SessionStore,
    trace: TraceStore,
    out: ExportTarget,
    options: ExportOptions | None = None,
) -> ExportSummary:
    """Write one session as an event log v0.2 (JSON Lines, hash-chained) to a path or stream."""
    entries, summary = event_log_entries(load_recording(session_id, sessions, trace), options)
    summary.path = write_output(jsonl_bytes(entries), out)
    return summary
