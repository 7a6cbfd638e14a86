"""A session's trace as OpenTelemetry GenAI spans (semantic conventions 1.37), encoded as OTLP/JSON.

One trace per session. Each turn is an `invoke_agent` span; under it, a `chat {model}` span per
LLM call attempt and an `execute_tool {name}` span per tool call. A span's parent is the turn that
contains it; the event that caused it (its parent_event_id) becomes a span link. Other turn events
become span events. Without `include_content` no message text is written (docs/interop.md).
"""

from __future__ import annotations

from typing import Any

from metis_core import __version__
from metis_core.events.envelope import Event, Sensitivity
from metis_core.export.message_rendering import compact_json, finish_reason, otel_message, tool_result_text
from metis_core.export.options import ExportOptions
from metis_core.export.otel_spans import Span
from metis_core.export.otlp_json import (
    SPAN_KIND_CLIENT,
    SPAN_KIND_INTERNAL,
    AttributeValue,
    attribute_list,
    is_attribute_value,
    trace_id_for_session,
)
from metis_core.export.output import ExportTarget, json_bytes, write_output
from metis_core.export.session_recording import SessionRecording, load_recording
from metis_core.export.summary import ExportSummary
from metis_core.messages import Role
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore

SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"
SCOPE_NAME = "metis_core.export.otel_genai"
PROVIDER_NAMES = {"gemini": "gcp.gemini", "openai_responses": "openai"}
"""Our provider keys that differ from the well-known `gen_ai.provider.name` values."""
LEGACY_SYSTEM_NAMES = {"openai_responses": "openai"}
"""Same for the pre-1.37 `gen_ai.system` (where Gemini was still `gemini`)."""
SAFE_PRIVATE_FIELDS = {
    "tool.confirmation_requested": ("tool_name", "side_effects", "confirmation_request_id", "expires_at"),
    "tool.confirmation_resolved": ("decision", "scope", "confirmation_request_id"),
}
"""Fields of private events that hold no conversation content, so span events may carry them."""
INFERENCE_DETAILS = "gen_ai.client.inference.operation.details"


def _model_name(model: str) -> str:
    return model.partition(":")[2] or model


def _int(payload: dict[str, Any], key: str) -> int:
    value = payload.get(key)
    return value if isinstance(value, int) else 0


class _TraceBuilder:
    def __init__(self, recording: SessionRecording, options: ExportOptions) -> None:
        self.rec = recording
        self.options = options
        self.trace_id = trace_id_for_session(recording.session_id)
        self.spans: list[Span] = []
        self.span_of: dict[str, Span] = {}
        self.turn_spans: dict[str, Span] = {}
        self.summary = ExportSummary("otel", recording.session_id, events_read=len(recording.events))

    # --- walking the events ----------------------------------------------------------------

    def build(self) -> dict[str, Any]:
        handlers = {
            "turn.started": self._turn_started, "route.decided": self._route_decided,
            "llm.call_started": self._call_started, "llm.call_completed": self._call_completed,
            "llm.call_failed": self._call_failed, "tool.called": self._tool_called,
            "tool.completed": self._tool_completed, "tool.failed": self._tool_failed,
            "turn.completed": self._turn_completed, "turn.cancelled": self._turn_cancelled,
        }
        for event in self.rec.events:
            handler = handlers.get(event.type, self._decoration)
            if handler(event):
                self.summary.exported += 1
            else:
                self.summary.skip(event.type)
        self._finish_open_spans()
        spans = sorted(self.spans, key=lambda s: (s.start_us, s.opening.id))
        self.summary.documents = len(spans)
        return {"resourceSpans": [{
            "resource": {"attributes": attribute_list({
                "service.name": self.options.service_name, "service.version": __version__,
            })},
            "scopeSpans": [{
                "scope": {"name": SCOPE_NAME, "version": __version__},
                "spans": [span.to_otlp(self.trace_id) for span in spans],
                "schemaUrl": SCHEMA_URL,
            }],
            "schemaUrl": SCHEMA_URL,
        }]}

    def _cause(self, event: Event) -> tuple[Span, Event] | None:
        """The nearest cause of `event` that became part of a span, with that span."""
        for ancestor in self.rec.ancestors(event):
            span = self.span_of.get(ancestor.id)
            if span is not None:
                return span, ancestor
        return None

    def _owner(self, event: Event) -> Span | None:
        """The span an event belongs to: its nearest cause's, else its turn's."""
        cause = self._cause(event)
        return cause[0] if cause is not None else self.turn_spans.get(event.turn_id or "")

    def _open(self, event: Event, name: str, kind: int, attributes: dict[str, AttributeValue | None]) -> Span:
        parent = self.turn_spans.get(event.turn_id or "")
        cause = self._cause(event)
        if parent is None and cause is not None:
            parent = cause[0].root
        span = Span(event, name, kind, parent, {**attributes, "metis.event.id": event.id})
        if cause is not None and cause[0] is not parent:
            span.add_link(self.trace_id, *cause)
        self.spans.append(span)
        self.span_of[event.id] = span
        span.touch(event.timestamp_us)
        return span

    def _closing(self, event: Event, opening_type: str) -> Span | None:
        for ancestor in self.rec.ancestors(event):
            if ancestor.type == opening_type:
                span = self.span_of.get(ancestor.id)
                if span is not None and span.end is None:
                    span.close(event)
                    self.span_of[event.id] = span
                    return span
                return None
        return None

    def _provider(self, provider: str) -> dict[str, AttributeValue | None]:
        attributes: dict[str, AttributeValue | None] = {"gen_ai.provider.name": PROVIDER_NAMES.get(provider, provider)}
        if self.options.legacy_system_attribute:
            attributes["gen_ai.system"] = LEGACY_SYSTEM_NAMES.get(provider, provider)
        return attributes

    # --- turns -----------------------------------------------------------------------------

    def _turn_started(self, event: Event) -> bool:
        if event.turn_id is None or event.turn_id in self.turn_spans:
            return False
        agent = self.options.agent_name
        span = self._open(event, f"invoke_agent {agent}", SPAN_KIND_INTERNAL, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": self.rec.session_id, "metis.turn.id": event.turn_id,
        })
        self.turn_spans[event.turn_id] = span
        return True

    def _route_decided(self, event: Event) -> bool:
        span = self.turn_spans.get(event.turn_id or "")
        if span is None:
            return False
        payload = event.payload
        chosen = str(payload["chosen_model"])
        span.attributes.update(self._provider(chosen.partition(":")[0]))
        span.attributes["gen_ai.request.model"] = _model_name(chosen)
        chain = payload.get("chain") or []
        index = _int(payload, "winner_index")
        winner = chain[index] if 0 <= index < len(chain) else {}
        span.add_event("metis.route.decided", event, {
            "metis.event.id": event.id, "metis.route.chosen_model": chosen,
            "metis.route.policy": winner.get("policy"), "metis.route.reason": winner.get("reason"),
            "metis.route.rule_name": winner.get("rule_name"), "metis.route.elapsed_ms": payload.get("elapsed_ms"),
        })
        self.span_of[event.id] = span
        return True

    def _turn_completed(self, event: Event) -> bool:
        span = self._closing(event, "turn.started")
        if span is None:
            return False
        p = event.payload
        unpriced = (p.get("signals_extra") or {}).get("unpriced_calls")
        span.attributes.update({
            "gen_ai.usage.input_tokens": _int(p, "total_input_tokens"),
            "gen_ai.usage.output_tokens": _int(p, "total_output_tokens"),
            # with unpriced calls the total is a lower bound (metis.unpriced_calls), or unknown when nothing was priced
            "metis.cost_usd": None if unpriced and not p.get("total_cost_usd") else p.get("total_cost_usd"),
            "metis.unpriced_calls": unpriced, "metis.turn.stop_reason": p.get("stop_reason"),
            "metis.turn.llm_call_count": p.get("llm_call_count"),
            "metis.turn.tool_call_count": p.get("tool_call_count"),
        })
        error = (p.get("signals_extra") or {}).get("error")
        if error:
            failures = [s for s in self.spans if s.root is span and s.attributes.get("gen_ai.operation.name") == "chat"
                        and s.attributes.get("error.type")]
            error_type = str(failures[-1].attributes["error.type"]) if failures else "_OTHER"
            span.fail(error_type, str(error))
        return True

    def _turn_cancelled(self, event: Event) -> bool:
        span = self._closing(event, "turn.started")
        if span is None:
            return False
        reason = str(event.payload.get("reason"))
        span.attributes["metis.turn.cancel_reason"] = reason
        span.fail("cancelled", f"turn cancelled ({reason})")
        return True

    # --- model calls -----------------------------------------------------------------------

    def _call_started(self, event: Event) -> bool:
        p = event.payload
        model = str(p["model"])
        self._open(event, f"chat {_model_name(model)}", SPAN_KIND_CLIENT, {
            "gen_ai.operation.name": "chat", **self._provider(str(p["provider"])),
            "gen_ai.request.model": _model_name(model), "gen_ai.conversation.id": self.rec.session_id,
            "metis.model": model, "metis.request_id": p.get("request_id"), **_request_attributes(p),
        })
        return True

    def _call_completed(self, event: Event) -> bool:
        span = self._closing(event, "llm.call_started")
        if span is None:
            return False
        p = event.payload
        message = self.rec.messages.last_between(span.opening.id, event.id, Role.ASSISTANT)
        raw = (message.metadata.provider_raw if message is not None else None) or {}
        # provider_raw is the adapters' round-trip aid; only these two well-known keys are read.
        response_id = raw.get("id") or raw.get("response_id")
        response_model = raw.get("model") or raw.get("model_version")
        stop = message.metadata.stop_reason if message is not None else p.get("stop_reason")
        cached, created = _int(p, "cached_input_tokens"), _int(p, "cache_creation_input_tokens")
        span.attributes.update({
            "gen_ai.response.model": response_model if isinstance(response_model, str) else None,
            "gen_ai.response.id": response_id if isinstance(response_id, str) else None,
            "gen_ai.response.finish_reasons": [finish_reason(stop)],
            # 1.37: input_tokens counts cached and cache-written tokens too; ours never does.
            "gen_ai.usage.input_tokens": _int(p, "input_tokens") + cached + created,
            "gen_ai.usage.output_tokens": _int(p, "output_tokens"),
            "gen_ai.usage.cache_read.input_tokens": cached,
            "gen_ai.usage.cache_creation.input_tokens": created,
            "metis.stop_reason": stop,
            # a call of a model with no price has no cost (the payload's 0.0 is no price): left out
            "metis.cost_usd": None if p.get("pricing_version") == "unpriced" else p.get("cost_usd"),
            "metis.pricing_version": p.get("pricing_version"), "metis.latency_ms": p.get("latency_ms"),
            "metis.message.id": message.id if message is not None else None,
        })
        if self.options.include_content:
            history = [otel_message(m) for m in self.rec.messages.before(span.opening.id)]
            output = [otel_message(message, with_finish_reason=True)] if message is not None else []
            span.add_event(INFERENCE_DETAILS, event, {
                "gen_ai.input.messages": compact_json(history), "gen_ai.output.messages": compact_json(output),
            })
        return True

    def _call_failed(self, event: Event) -> bool:
        span = self._closing(event, "llm.call_started")
        if span is None:
            return False
        p = event.payload
        span.attributes.update({"metis.retry_count": p.get("retry_count"), "metis.latency_ms": p.get("latency_ms")})
        span.fail(str(p["error_class"]), str(p.get("error_message_redacted") or p["error_class"]))
        return True

    # --- tools -----------------------------------------------------------------------------

    def _tool_called(self, event: Event) -> bool:
        p = event.payload
        use = self.rec.messages.tool_use(str(p["tool_use_id"]))
        self._open(event, f"execute_tool {p['tool_name']}", SPAN_KIND_INTERNAL, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": p["tool_name"],
            "gen_ai.tool.call.id": p["tool_use_id"], "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": self.rec.session_id, "metis.tool.side_effects": p.get("side_effects"),
            "metis.tool.input_hash": p.get("input_hash"), "metis.tool.input_size_bytes": p.get("input_size_bytes"),
            "gen_ai.tool.call.arguments": compact_json(use.input) if self.options.include_content and use else None,
        })
        return True

    def _tool_completed(self, event: Event) -> bool:
        span = self._closing(event, "tool.called")
        if span is None:
            return False
        p = event.payload
        span.attributes.update({
            "metis.tool.output_size_bytes": p.get("output_size_bytes"), "metis.latency_ms": p.get("latency_ms"),
        })
        if self.options.include_content:
            result = self.rec.messages.tool_result(str(p["tool_use_id"]))
            span.attributes.update({
                "gen_ai.tool.call.result": tool_result_text(result) if result is not None else None,
                "metis.tool.files_modified": p.get("files_modified") or None,
                "metis.tool.command_executed": p.get("command_executed"),
            })
        if not p.get("success", True):
            span.fail("tool_error", "the tool reported a failure")
        return True

    def _tool_failed(self, event: Event) -> bool:
        span = self._closing(event, "tool.called")
        if span is None:
            return False
        p = event.payload
        error_class = str(p["error_class"])
        span.attributes["metis.latency_ms"] = p.get("latency_ms")
        message = str(p.get("error_message")) if self.options.include_content else f"tool call failed ({error_class})"
        span.fail(error_class, message)
        return True

    # --- everything else -------------------------------------------------------------------

    def _decoration(self, event: Event) -> bool:
        """Any other event becomes a span event on its cause's span, or is skipped without one.

        Payload fields are copied only from events recorded as non-private, or from the few
        private fields known to hold no content; an owner that had already ended hands the event
        up to its parent so span events stay inside their span's time.
        """
        span = self._owner(event)
        if span is None:
            return False
        while span.parent is not None and span.ended_before(event.timestamp_us):
            span = span.parent
        if event.sensitivity is Sensitivity.PRIVATE:
            fields = SAFE_PRIVATE_FIELDS.get(event.type, ())
        else:
            fields = tuple(event.payload)
        attributes: dict[str, AttributeValue | None] = {"metis.event.id": event.id}
        for key in fields:
            value = event.payload.get(key)
            if is_attribute_value(value):
                attributes[f"metis.{key}"] = value
        span.add_event(f"metis.{event.type}", event, attributes)
        self.span_of[event.id] = span
        return True

    def _finish_open_spans(self) -> None:
        for span in self.spans:
            if span.parent is None and span.end_us is None:
                span.finish(span.latest_us, incomplete=True)
        for span in self.spans:
            if span.end_us is not None:
                continue
            turn = span.root
            cancelled = turn.end is not None and turn.end.type == "turn.cancelled"
            span.finish(turn.end_us or span.latest_us, incomplete=not cancelled)
            if cancelled:
                span.fail("cancelled", "cancelled with its turn before it finished")


def otel_trace_request(
    recording: SessionRecording, options: ExportOptions | None = None
) -> tuple[dict[str, Any], ExportSummary]:
    """The ExportTraceServiceRequest (OTLP/JSON) for a recording, and what went into it."""
    builder = _TraceBuilder(recording, options or ExportOptions())
    return builder.build(), builder.summary


def export_otel(
    session_id: str,
    sessions: SessionStore,
    trace: TraceStore,
    out: ExportTarget,
    options: ExportOptions | None = None,
) -> ExportSummary:
    """Write one session as an OTLP/JSON trace (one JSON document) to a path or stream."""
    request, summary = otel_trace_request(load_recording(session_id, sessions, trace), options)
    summary.path = write_output(json_bytes(request), out)
    return summary


def _request_attributes(payload: dict[str, Any]) -> dict[str, Any]:
    """The semconv's gen_ai.request.* (and gen_ai.output.type) from the call's recorded request_options;
    nothing when the record predates them or the call set none."""
    asked = payload.get("request_options")
    if not isinstance(asked, dict):
        return {}
    stop = asked.get("stop")
    structured = asked.get("output") is not None or asked.get("response_format") is not None
    return {
        "gen_ai.request.max_tokens": asked.get("max_tokens"), "gen_ai.request.temperature": asked.get("temperature"),
        "gen_ai.request.top_p": asked.get("top_p"),
        "gen_ai.request.stop_sequences": [str(s) for s in stop] if isinstance(stop, list) else stop,
        "gen_ai.output.type": "json" if structured else None,
    }

