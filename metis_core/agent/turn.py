"""One turn of the agent loop, with every step on the record (bus spec §8.1).

turn.started → route.decided → llm.call_started → (stream) → llm.call_completed → tool.called →
tool.completed/failed → llm.call_started … → turn.completed, each event naming its parent. Every
message is persisted as it completes. Ctrl-C (task cancellation) keeps the partial assistant
message as CANCELLED, emits turn.cancelled, and leaves the session usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.continuation import MAX_CONTINUATIONS, paused
from metis_core.agent.call_events import EVENT_STOP_REASONS, CallObserver
from metis_core.agent.call_events import completed_payload as completed_payload  # re-exported (gateway)
from metis_core.agent.cancel_reasons import cancel_actor, cancel_reason
from metis_core.agent.compaction.view import is_provider_compaction
from metis_core.agent.context import resolve_file_refs, turn_needs
from metis_core.agent.dispatch import ToolDispatcher
from metis_core.agent.recording import TurnRecorder
from metis_core.agent.request_options import request_options_record
from metis_core.agent.route_advice import RouteSuggestion
from metis_core.agent.session import Session
from metis_core.agent.stream_tracker import StreamTracker
from metis_core.errors import (
    AllModelsFailedError,
    CapabilityMismatchError,
    CassetteError,
    MalformedResponseError,
    MetisError,
    ProviderError,
)
from metis_core.events.envelope import Actor, Event
from metis_core.events.redaction import redact
from metis_core.hashing import sha256_hex
from metis_core.ids import new_ulid
from metis_core.messages import (
    ContentBlock,
    Message,
    MessageStatus,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    StreamError,
    StreamEvent,
    TextBlock,
    ThinkingBlock,
    tool_result_message,
)
from metis_core.prompts import CompositionContext
from metis_core.routing.engine import RouteDecision, TurnNeeds
from metis_core.routing.fallback import FallbackChain

StreamSink = Callable[[StreamEvent], None]
MessageSink = Callable[[Message], None]
"""Told of every message a turn stores (each call's answer, each tool result), once it is stored."""
TurnClosingHook = Callable[["TurnResult", TurnRecorder, Event | None], None]
"""Called with the finished result just before turn.completed, to add events to the turn (metis replay)."""
TURN_STOP_REASONS = {*EVENT_STOP_REASONS, "error"}
MAX_LLM_CALLS_PER_TURN = 25
SHARED_TEXT_LIMIT = 4000
"""Characters of the scrubbed user message turn.started carries when trace sharing is on."""


def emit_turn_started(recorder: TurnRecorder, session: Session, user_text: str, needs: TurnNeeds, *,
                      share_text: bool) -> Event | None:
    """turn.started: the user's message as its hash (with `share_text`, also scrubbed and cut to
    SHARED_TEXT_LIMIT) and what the turn needs of a model."""
    shared = redact(user_text, limit=SHARED_TEXT_LIMIT) if share_text else None
    return recorder.emit("turn.started", {
        "user_message_hash": sha256_hex(user_text), "user_message_text_redacted": shared,
        "estimated_input_tokens": needs.estimated_input_tokens, "has_images": needs.has_images,
        "has_tool_calls_in_history": any(m.tool_uses() for m in session.history),
    }, None, actor=Actor.USER)


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """How far one turn may go: model calls, and input plus output tokens across them (None: no cap)."""

    max_llm_calls: int = MAX_LLM_CALLS_PER_TURN
    max_tokens: int | None = None


@dataclass
class TurnResult:
    turn_id: str
    produced: list[Message] = field(default_factory=list)
    final: Message | None = None
    stop_reason: str = "end_turn"
    cancelled: bool = False
    cancel_reason: str | None = None
    """One of CANCEL_REASONS (agent/cancel_reasons.py) when `cancelled`."""
    error: str | None = None
    failure: BaseException | None = None
    """The exception behind `error`, for callers that sort failures (exit codes, retries)."""
    model: str | None = None
    llm_calls: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    pricing_version: str | None = None
    limit_reached: str | None = None
    """"llm_calls" or "tokens" when the turn stopped at its TurnLimits."""
    unpriced_calls: int = 0
    """Answers whose model has no price: `cost_usd` leaves them out, so a total is then incomplete."""
    suggestion: RouteSuggestion | None = None
    """A pattern recommendation a rule outranked (None when there was none, or it was overridden)."""
    route_decided_id: str | None = None

    @property
    def answer(self) -> str:
        return self.final.text() if self.final is not None else ""


class TurnRunner:
    """Runs turns for sessions of one Runtime (bus, store, routing, client, tools)."""

    def __init__(self, runtime: Any) -> None:
        self.rt = runtime

    async def run(
        self,
        session: Session,
        user_text: str,
        *,
        attachments: list[ContentBlock] | None = None,
        override: str | None = None,
        on_stream: StreamSink | None = None,
        on_message: MessageSink | None = None,
        options: AdapterOptions | None = None,
        timeout_seconds: float | None = None,
        before_completed: TurnClosingHook | None = None,
        limits: TurnLimits | None = None,
    ) -> TurnResult:
        """One turn. Past `timeout_seconds` (or when its task is cancelled) it ends as turn.cancelled
        with the reason given (CANCEL_REASONS; a bare cancel is user_cancel), keeping the partial answer."""
        rt = self.rt
        limits = limits or TurnLimits()
        turn_id = new_ulid()
        result = TurnResult(turn_id=turn_id)
        recorder = TurnRecorder(rt.bus, session.id, turn_id)
        rt.current_session.set(session.id)
        started_clock = time.perf_counter()

        user = Message(role=Role.USER, session_id=session.id, content=[TextBlock(text=user_text), *(attachments or [])])
        session.append(user, rt.store)
        registry = session.tools or rt.tools
        tools = registry.definitions()
        system, composed = self._compose(session, user_text)
        hosted_tools = options.hosted_tools if options is not None else dict(rt.config.defaults.hosted_tools)
        needs = turn_needs([*system, *session.history], tools, session.workspace, user_text, tuple(hosted_tools))
        compactor = rt.compactor
        fits = compactor.floor_tokens(session, system, tools)  # what compaction can bring it down to
        started = emit_turn_started(recorder, session, user_text, needs, share_text=rt.config.sessions.share_traces)

        try:
            decision = session.engine.decide(replace(needs, estimated_input_tokens=fits), override=override,
                                             sticky=session.sticky_model,
                                             delegate=session.delegate_model)
        except MetisError as error:  # no model can take this turn: close it on the record, then say why
            result.error = str(error)
            result.failure = error
            session.turn_count += 1
            self._completed(recorder, started, result, started_clock)
            raise
        routed = recorder.emit("route.decided", decision.payload(), started, actor=Actor.SYSTEM)
        result.route_decided_id = routed.id if routed is not None else None
        result.model = decision.chosen_model
        members, record = decision.members, decision.record
        # llm.call_started descends from turn.started (spec §8.1), or from route.overridden
        parent: Event | None = started
        if decision.pattern_match is not None:
            self._pattern_matched(recorder, decision, routed)
        elif decision.deferred_pattern is not None:
            try:
                overridden = await self._ask_about_deferred(session, recorder, decision, routed, needs, result)
            except asyncio.CancelledError as cancel:  # Ctrl-C at the question: ends like any cancelled turn
                self._cancelled(session, recorder, started, StreamTracker(), None, result, cancel_reason(cancel))
                return result
            if overridden is not None:
                parent, members, record = overridden
                result.model = members[0]
        chain = FallbackChain(rt.client, members, health=rt.health, settings=decision.settings)
        dispatcher = ToolDispatcher(registry, session.confirmation, session.tool_context())
        base = (replace(options, model=members[0]) if options
                else AdapterOptions(model=members[0], hosted_tools=hosted_tools))
        asked = request_options_record(base, tools=[t.name for t in tools])
        tracker = StreamTracker()
        observer: CallObserver | None = None
        expired: list[bool] = []
        deadline = None if timeout_seconds is None else _cancel_later(timeout_seconds, expired)
        awaiting: list[Any] = []  # the tool calls of the stored answer that have no result stored yet
        in_call = False  # between llm.call_started and the final message of that call
        continuations = 0  # paused answers sent back to resume (adapters/continuation.py)
        try:
            while True:
                prepared = await compactor.prepare(session, system, tools, members, recorder, parent,
                                                   trigger=session.compaction_trigger)
                session.compaction_trigger = "threshold"
                parent = prepared.parent
                if prepared.summary is not None:  # the summarising calls are this turn's calls too
                    result.llm_calls += int(getattr(prepared.summary.metadata, "model_calls", 1))
                    self._count_usage(result, prepared.summary)
                observer = CallObserver(recorder, parent, prepared.tokens, composed,
                                        is_worker=session.is_worker, request_options=asked)
                tracker = StreamTracker()
                awaiting = []
                in_call = True
                final: Message | None = None
                stream_error: StreamError | None = None
                history = [*system, *resolve_file_refs(prepared.messages, session.workspace)]
                options = replace(base, compact_at_tokens=prepared.compact_at) if prepared.compact_at else base
                async for event in chain.astream(
                    history, tools=tools, options=options, tool_ids=session.tool_ids, session_id=session.id,
                    routing=record, observer=observer,
                ):
                    tracker.observe(event)
                    if isinstance(event, StreamError):
                        stream_error = event
                    elif event.type == "message_complete":
                        final = event.message
                    if on_stream is not None:
                        on_stream(event)
                result.llm_calls += observer.attempts
                if final is None:
                    raise MalformedResponseError(
                        "the stream ended without a final message", provider=observer.model.partition(":")[0]
                    )
                in_call = False
                tracker = StreamTracker()  # what it held is in `final` now: nothing partial to save on Ctrl-C
                session.append(final, rt.store, provider=final.metadata.provider)
                if prepared.compact_at is not None and is_provider_compaction(final):
                    compactor.record_native(recorder, parent, final, prepared, members)
                result.produced.append(final)
                if on_message is not None:
                    on_message(final)
                result.final = final
                result.model = final.metadata.model
                self._count_usage(result, final)
                if final.status is not MessageStatus.COMPLETE or stream_error is not None:
                    message = stream_error.message if stream_error else "the response ended incomplete"
                    if final.metadata.usage is not None:  # billed (a cut tool call, usage before a break):
                        # a completed call, as the store counts it; why the turn failed is on turn.completed
                        recorder.emit("llm.call_completed", completed_payload(final), observer.started,
                                      actor=Actor.AGENT)
                    else:
                        observer.failed(observer.model, stream_error.error_class if stream_error else "other",
                                        message)
                    result.error = message
                    result.stop_reason = "max_tokens" if final.metadata.stop_reason == "max_tokens" else "end_turn"
                    break
                completed = recorder.emit("llm.call_completed", completed_payload(final), observer.started,
                                          actor=Actor.AGENT)
                uses = final.tool_uses()
                result.stop_reason = final.metadata.stop_reason or "end_turn"
                if not uses and paused(final) and result.llm_calls < limits.max_llm_calls:
                    if continuations < MAX_CONTINUATIONS:  # the provider paused its own tools: resume the turn
                        continuations += 1
                        parent = completed
                        continue
                    result.limit_reached = "llm_calls"
                    result.error = (f"the model paused its hosted tools {continuations + 1} times in a row; stopped "
                                    "asking it to continue (send another message to go on)")
                    break
                if not uses:
                    break
                if limits.max_tokens is not None and result.input_tokens + result.output_tokens > limits.max_tokens:
                    result.limit_reached = "tokens"
                    result.error = (f"stopped after {result.input_tokens + result.output_tokens} tokens, over the "
                                    f"turn's budget of {limits.max_tokens}")
                    break
                if result.llm_calls >= limits.max_llm_calls:
                    result.limit_reached = "llm_calls"
                    result.error = f"stopped after {limits.max_llm_calls} model calls in one turn"
                    break
                awaiting = uses
                outcomes = await dispatcher.run_all(uses, recorder, completed)
                awaiting = []
                for outcome in outcomes:
                    session.append(outcome.message, rt.store)
                    result.produced.append(outcome.message)
                    if on_message is not None:
                        on_message(outcome.message)
                result.tool_calls += len(uses)
                finished = [o.last_event for o in outcomes if o.last_event is not None]
                parent = max(finished, key=lambda e: e.id) if finished else completed
        except asyncio.CancelledError as cancel:
            reason = "timeout" if expired else cancel_reason(cancel)
            self._answer_awaiting(session, dispatcher, awaiting, result)
            self._cancelled(session, recorder, started, tracker, observer if in_call else None, result, reason)
            return result
        except (ProviderError, CapabilityMismatchError, AllModelsFailedError, CassetteError) as error:
            result.error = str(error)
            result.failure = error
            if observer is not None and in_call:  # the failed attempts of the call that raised
                result.llm_calls += observer.attempts
        except Exception as error:  # anything else still closes the turn on the record, then surfaces
            self._interrupted(session, tracker, observer if in_call else None, result, error)
            session.turn_count += 1
            self._completed(recorder, started, result, started_clock)
            if isinstance(error, MetisError):
                return result
            raise
        finally:
            if deadline is not None:
                deadline.cancel()
            rt.store.update_session(session.id, tool_id_map=session.tool_ids.to_dict())
        session.turn_count += 1
        if before_completed is not None:
            before_completed(result, recorder, started)
        self._completed(recorder, started, result, started_clock)
        return result

    def _compose(self, session: Session, user_text: str) -> tuple[list[Message], dict[str, Any] | None]:
        """The composed system message for this turn's requests (not stored), and its record."""
        prompts = self.rt.prompts
        if prompts.empty:
            return [], None
        composition = prompts.compose(CompositionContext(session.id, session.workspace, user_text,
                                                         tuple(session.history)))
        if composition is None:
            return [], None
        system = Message(role=Role.SYSTEM, session_id=session.id, content=[TextBlock(text=composition.text)])
        return [system], composition.record()

    @staticmethod
    def _pattern_matched(recorder: TurnRecorder, decision: RouteDecision, routed: Event | None) -> None:
        match = decision.pattern_match
        assert match is not None
        recorder.emit("pattern.matched", {
            "fingerprint_id": match.fingerprint_id, "fingerprint_kind": match.fingerprint_kind,
            "chosen_model": decision.chosen_model, "confidence": match.confidence,
            "sample_size": match.sample_size, "k_cluster_size": match.k_cluster_size,
            "alternatives_count": len(match.alternatives),
        }, routed, actor=Actor.SYSTEM)

    async def _ask_about_deferred(
        self, session: Session, recorder: TurnRecorder, decision: RouteDecision, routed: Event | None,
        needs: TurnNeeds, result: TurnResult,
    ) -> tuple[Event | None, list[str], RoutingDecisionRecord] | None:
        """Offer the deferred pattern model; (parent, members, record) when the user overrides."""
        advice = decision.deferred_pattern
        assert advice is not None
        suggestion = RouteSuggestion(
            turn_id=recorder.turn_id or "", chosen_model=decision.chosen_model, suggested_model=advice.model,
            rule_name=decision.deferred_rule, confidence=advice.confidence, sample_size=advice.sample_size,
        )
        result.suggestion = suggestion
        asker = self.rt.route_advice
        answer = await asker(suggestion) if asker is not None else None
        if answer == "ignore":
            result.suggestion = None
            dismiss_suggestion(recorder, suggestion, routed)
            return None
        if answer != "override":
            return None
        try:
            members = session.engine.members_for(advice.model, needs)
        except MetisError:  # the suggestion stopped fitting (benched since routing): keep the rule's model
            return None
        result.suggestion = None
        overridden = recorder.emit("route.overridden", {
            "original_chosen_model": decision.chosen_model, "new_chosen_model": members[0],
            "deferred_policy": "pattern", "rule_name": decision.deferred_rule,
            "pattern_confidence": advice.confidence,
        }, routed, actor=Actor.USER)
        record = RoutingDecisionRecord(
            mode=RoutingMode.PATTERN, chosen_model=members[0], reason="pattern recommendation applied with "
            "/route override", rule_name=decision.deferred_rule, confidence=advice.confidence,
            alternatives_considered=[decision.chosen_model],
        )
        return overridden, members, record

    @staticmethod
    def _completed(recorder: TurnRecorder, started: Event | None, result: TurnResult, started_clock: float) -> None:
        if result.error is not None and result.stop_reason != "max_tokens":
            result.stop_reason = "error"  # a failed turn never reads as an ordinary end_turn
        stop = result.stop_reason if result.stop_reason in TURN_STOP_REASONS else "end_turn"
        recorder.emit("turn.completed", {
            "stop_reason": stop, "llm_call_count": result.llm_calls, "tool_call_count": result.tool_calls,
            "total_input_tokens": result.input_tokens, "total_output_tokens": result.output_tokens,
            "total_cost_usd": float(result.cost_usd),
            "wall_time_seconds": round(time.perf_counter() - started_clock, 3),
            "signals_extra": _signals(result),
        }, started, actor=Actor.AGENT)

    @staticmethod
    def _count_usage(result: TurnResult, message: Message) -> None:
        usage = message.metadata.usage
        if usage is not None:
            result.input_tokens += usage.total_input_tokens
            result.output_tokens += usage.output_tokens
            result.cost_usd += usage.cost_usd or Decimal(0)
            result.pricing_version = usage.pricing_version or result.pricing_version
        if usage is None or usage.cost_usd is None:
            result.unpriced_calls += 1

    def _answer_awaiting(self, session: Session, dispatcher: ToolDispatcher, awaiting: list[Any],
                         result: TurnResult) -> None:
        """Store a result for every call of the stored answer, so the history stays valid after Ctrl-C."""
        for use in awaiting:
            settled = dispatcher.settled.get(use.id)
            # A settled result got its id when its call finished; stamp it now so ids follow call order.
            message = settled.message.model_copy(update={"id": new_ulid()}) if settled is not None else \
                tool_result_message(use.id, "cancelled by the user", is_error=True, session_id=session.id)
            session.append(message, self.rt.store)
            result.produced.append(message)
            result.tool_calls += 1

    def _interrupted(
        self, session: Session, tracker: StreamTracker, observer: CallObserver | None, result: TurnResult,
        error: Exception,
    ) -> None:
        """An unexpected failure: the in-flight call is marked failed and what it showed is kept PARTIAL."""
        message = str(error) if isinstance(error, MetisError) else f"unexpected {type(error).__name__}: {error}"
        result.error = message
        result.failure = error
        if observer is None:
            return
        result.llm_calls += observer.attempts
        if observer.started is not None:
            observer.failed(observer.model, getattr(error, "error_class", "other"), message)
        if tracker.has_content():
            partial = tracker.partial_message(session.id, observer.model, MessageStatus.PARTIAL, "error")
            with contextlib.suppress(MetisError):  # a failing store: the partial stays in the result only
                session.append(partial, self.rt.store, provider=partial.metadata.provider)
            result.produced.append(partial)
            result.final = partial

    def _cancelled(
        self, session: Session, recorder: TurnRecorder, started: Event | None, tracker: StreamTracker,
        observer: CallObserver | None, result: TurnResult, reason: str = "user_cancel",
    ) -> None:
        rt = self.rt
        result.cancelled = True
        result.cancel_reason = reason
        result.stop_reason = "cancelled"
        partial_calls = 0
        if observer is not None:  # only for a call still in flight: its attempts are not counted yet
            result.llm_calls += observer.attempts  # the call the cancel interrupted still happened
        if tracker.has_content() and observer is not None:
            partial = tracker.cancelled_message(session.id, observer.model)
            session.append(partial, rt.store, provider=partial.metadata.provider)
            result.produced.append(partial)
            result.final = partial
            partial_calls = 1
        rt.store.cancel_pending_tool_calls(session.id)
        session.turn_count += 1
        recorder.emit("turn.cancelled", {
            "reason": reason, "partial_llm_calls": partial_calls,
            "partial_tool_calls": sum(1 for m in result.produced if m.role is Role.TOOL),
        }, started, actor=cancel_actor(reason))


def _signals(result: TurnResult) -> dict[str, Any] | None:
    """turn.completed's extras: the error, and how many calls `total_cost_usd` could not price."""
    extra: dict[str, Any] = {}
    if result.error:
        extra["error"] = redact(result.error)
    if result.unpriced_calls:
        extra["unpriced_calls"] = result.unpriced_calls
    return extra or None


def _cancel_later(seconds: float, expired: list[bool]) -> asyncio.TimerHandle:
    """Cancel the running task after `seconds`, noting in `expired` that the clock did it."""
    task = asyncio.current_task()
    assert task is not None

    def expire() -> None:
        expired.append(True)
        task.cancel("timeout")

    return asyncio.get_running_loop().call_later(seconds, expire)


def dismiss_suggestion(recorder: TurnRecorder, suggestion: RouteSuggestion, routed: Event | str | None) -> None:
    """pattern.override_dismissed for `suggestion` (`/route ignore`), parented to its route.decided."""
    recorder.bus.emit_new("pattern.override_dismissed", {
        "chosen_model": suggestion.chosen_model, "dismissed_pattern_model": suggestion.suggested_model,
        "rule_name": suggestion.rule_name, "pattern_confidence": suggestion.confidence,
    }, session_id=recorder.session_id, turn_id=suggestion.turn_id, parent=routed, actor=Actor.USER)


def thinking_text(message: Message) -> str:
    return "".join(b.text for b in message.content if isinstance(b, ThinkingBlock))
