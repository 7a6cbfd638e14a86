"""A turn that must end in a structured answer (`metis run --schema`, docs/structured-output.md).

Like TurnRunner.run it records turn.started → route.decided → llm.call_* → turn.completed, but every
model call is one the StructuredRun asks for, and its steps (corrective retry, doubled budget,
refusal, NL-to-format, recovery, exhaustion) become llm.output_* events, each parented on the call it
follows. Routing refuses models that cannot carry the schema; each call goes through the routed
fallback chain like a plain turn's (health-aware order, llm.call_failed then the next member's
llm.call_started), and a member the chain falls back to gets its own plan. No tools are offered.
The session keeps the user message and one assistant message holding the validated JSON, carrying
every call's usage (messages/call_spend.py); a run that fails or is cancelled after priced calls
keeps one ERROR / CANCELLED message carrying them, so no priced call goes uncharged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.client import ModelClient
from metis_core.agent.call_events import CallObserver, completed_payload
from metis_core.agent.cancel_reasons import cancel_actor, cancel_reason
from metis_core.agent.context import resolve_file_refs, turn_needs
from metis_core.agent.recording import TurnRecorder
from metis_core.agent.redaction import redact
from metis_core.agent.request_options import request_options_record
from metis_core.agent.session import Session
from metis_core.agent.turn import TurnClosingHook, TurnResult, TurnRunner, emit_turn_started
from metis_core.errors import MalformedResponseError, MetisError
from metis_core.events.envelope import Actor, Event
from metis_core.ids import new_ulid
from metis_core.messages import Message, MessageStatus, Role, TextBlock, ToolDefinition
from metis_core.messages.call_spend import CallSpend
from metis_core.models.model_id import parse_model_id
from metis_core.routing.fallback import FallbackChain
from metis_core.structured.driver import StructuredRequest, StructuredRun
from metis_core.structured.policy import OutputPolicy
from metis_core.structured.result import OutputAttempt, StructuredResult
from metis_core.structured.spec import OutputSpec
from metis_core.structured.steps import (
    NlToFormatEngaged,
    OutputObserver,
    OutputRefused,
    OutputStep,
    OutputTruncated,
    RecoveryApplied,
    RetryAttempted,
    RetryExhausted,
)


class MemberRuns:
    """One StructuredRun per chain member, built when the chain reaches it (the plan is per model).

    A member that answered keeps its run: its next request (a corrective retry, a doubled budget) goes
    to it first. A member the chain falls back to starts the run afresh from its own first request.
    """

    def __init__(self, client: ModelClient, spec: OutputSpec, messages: list[Message],
                 options: AdapterOptions | None, policy: OutputPolicy | None, observer: OutputObserver | None,
                 tools: Sequence[ToolDefinition] = ()) -> None:
        self.client, self.spec, self.messages, self.tools = client, spec, messages, list(tools)
        self.options, self.policy, self.observer = options, policy, observer
        self.runs: dict[str, StructuredRun] = {}
        self.sent: dict[str, StructuredRequest] = {}
        """The request each member was last sent (a paused answer is continued from it)."""
        self.answered_by: str | None = None
        self.pending: StructuredRequest | None = None

    def order(self, members: list[str]) -> list[str]:
        """The chain for the next call: the member that answered last first, then the routed order."""
        return [self.answered_by, *(m for m in members if m != self.answered_by)] if self.answered_by else members

    def request_for(self, model: str) -> StructuredRequest:
        if model == self.answered_by and self.pending is not None:
            self.sent[model] = self.pending
            return self.pending
        caps = self.client.registry.capabilities(model)
        plan = self.client.adapter(parse_model_id(model).provider).structured_plan(self.spec, caps, model)
        chosen = dataclasses.replace(self.options, model=model) if self.options else AdapterOptions(model=model)
        run = StructuredRun(spec=self.spec, plan=plan, model=model, messages=self.messages, tools=self.tools,
                            options=chosen, max_output_tokens=caps.max_output_tokens, policy=self.policy,
                            observer=self.observer)
        self.runs[model] = run
        self.sent[model] = run.first_request()
        return self.sent[model]

    def take(self, model: str, answer: Message) -> StructuredRequest | StructuredResult[Any]:
        """`model`'s answer to its run: the next request (kept for it) or the result."""
        step = self.runs[model].take(answer)
        if not isinstance(step, StructuredResult):
            self.answered_by, self.pending = model, step
        return step

    def attempts(self) -> list[OutputAttempt]:
        """Every answer's attempt record, member by member in the order they were tried."""
        return [attempt for run in self.runs.values() for attempt in run.attempts]


@dataclass
class StructuredTurnResult:
    turn: TurnResult
    output: StructuredResult[Any] | None = None
    attempts: list[OutputAttempt] = dataclasses.field(default_factory=list)
    """Every answer the run received, also when it failed or was cancelled before a valid one."""


class OutputStepRecorder:
    """An OutputObserver that records each step as its llm.output_* event, parented on the last call."""

    def __init__(self, recorder: TurnRecorder) -> None:
        self.recorder = recorder
        self.parent: Event | None = None

    def __call__(self, step: OutputStep) -> None:
        event_type, payload = output_step_event(step)
        self.recorder.emit(event_type, payload, self.parent, actor=Actor.AGENT)


def output_step_event(step: OutputStep) -> tuple[str, dict[str, Any]]:
    """The catalog type and payload of one driver step (redacted where text can carry secrets)."""
    base: dict[str, Any] = {"model": step.model, "provider": parse_model_id(step.model).provider,
                            "output_name": step.output_name}
    if isinstance(step, RetryAttempted):
        return "llm.output_retried", {**base, "attempt": step.attempt, "reason": step.reason,
                                      "previous_error": _redacted(step.previous_error)}
    if isinstance(step, RetryExhausted):
        return "llm.output_exhausted", {**base, "total_attempts": step.total_attempts,
                                        "final_reason": step.final_reason, "final_error": _redacted(step.final_error)}
    if isinstance(step, OutputRefused):
        return "llm.output_refused", {**base, "refusal_text": _redacted(step.refusal_text),
                                      "safety_category": step.safety_category}
    if isinstance(step, OutputTruncated):
        return "llm.output_truncated", {**base, "stop_reason": step.stop_reason,
                                        "partial_payload_available": step.partial_payload_available,
                                        "output_tokens": step.output_tokens, "next_max_tokens": step.next_max_tokens}
    if isinstance(step, NlToFormatEngaged):
        return "llm.output_nl_to_format", {**base, "fallback_calls": step.fallback_calls}
    assert isinstance(step, RecoveryApplied)
    return "llm.output_recovered", {**base, "attempt": step.attempt, "path": step.path,
                                    "byte_offset": step.byte_offset}


def _keep_spend(rt: Any, session: Session, result: TurnResult, spend: CallSpend, last: Message | None,
                status: MessageStatus) -> None:
    """A run that ends without a valid answer still stores its completed calls' spend: one message with
    the last answer's content (or none) in `status`, carrying every call's usage."""
    if spend.calls == 0 or last is None:
        return
    kept = Message(role=Role.ASSISTANT, session_id=session.id, content=list(last.content),
                   metadata=last.metadata.model_copy(update={"status": status, "stop_reason": status.value}))
    spend.stamp(kept)
    session.append(kept, rt.store, provider=kept.metadata.provider)
    result.produced.append(kept)


def _redacted(text: str | None) -> str | None:
    return redact(text) if text is not None else None


async def run_structured_turn(runner: TurnRunner, session: Session, user_text: str, spec: OutputSpec, *,
                              policy: OutputPolicy | None = None, override: str | None = None,
                              options: AdapterOptions | None = None,
                              before_completed: TurnClosingHook | None = None) -> StructuredTurnResult:
    """`before_completed` is called with the finished result just before turn.completed (metis replay)."""
    rt = runner.rt
    turn_id = new_ulid()
    result = TurnResult(turn_id=turn_id)
    out = StructuredTurnResult(result)
    recorder = TurnRecorder(rt.bus, session.id, turn_id)
    rt.current_session.set(session.id)
    clock = time.perf_counter()
    session.append(Message(role=Role.USER, session_id=session.id, content=[TextBlock(text=user_text)]), rt.store)
    needs = dataclasses.replace(turn_needs(session.history, [], session.workspace, user_text),
                                output_schema=spec.schema)
    started = emit_turn_started(recorder, session, user_text, needs, share_text=rt.config.sessions.share_traces)
    steps = OutputStepRecorder(recorder)
    asked = request_options_record(options, output=spec, policy=policy)
    spend = CallSpend()
    last: Message | None = None
    runs: MemberRuns | None = None
    observer: CallObserver | None = None
    in_call = False  # between a call's llm.call_started and the end of its stream
    try:
        fits = rt.compactor.floor_tokens(session, [], [])  # a long history compacts (docs/context.md)
        decision = session.engine.decide(dataclasses.replace(needs, estimated_input_tokens=fits), override=override,
                                         sticky=session.sticky_model)
        recorder.emit("route.decided", decision.payload(), started, actor=Actor.SYSTEM)
        result.model = decision.chosen_model
        prepared = await rt.compactor.prepare(session, [], [], decision.members, recorder, started,
                                              trigger=session.compaction_trigger)
        session.compaction_trigger = "threshold"
        if prepared.summary is not None:  # the summarising calls are this turn's calls too
            result.llm_calls += int(getattr(prepared.summary.metadata, "model_calls", 1))
            TurnRunner._count_usage(result, prepared.summary)
        runs = MemberRuns(rt.client, spec, resolve_file_refs(prepared.messages, session.workspace), options, policy,
                          steps)
        parent: Event | None = prepared.parent
        while True:
            observer = CallObserver(recorder, parent, needs.estimated_input_tokens, request_options=asked)
            chain = FallbackChain(rt.client, runs.order(decision.members), health=rt.health,
                                  settings=decision.settings)
            final: Message | None = None
            in_call = True
            async for event in chain.astream([], tool_ids=session.tool_ids, session_id=session.id,
                                             routing=decision.record, observer=observer, request_for=runs.request_for):
                if event.type == "message_complete":
                    final = event.message
            result.llm_calls += observer.attempts
            in_call = False
            if final is None:
                raise MalformedResponseError("the stream ended without a final message",
                                             provider=observer.model.partition(":")[0])
            TurnRunner._count_usage(result, final)
            spend.add(final.metadata.usage)
            last = final
            result.model = observer.model
            call = recorder.emit("llm.call_completed", completed_payload(final), observer.started,
                                 actor=Actor.AGENT) if final.metadata.usage is not None else observer.started
            steps.parent = parent = call
            step = runs.take(observer.model, final)
            if isinstance(step, StructuredResult):
                out.output = step
                break
        answer = Message(role=Role.ASSISTANT, session_id=session.id, metadata=final.metadata.model_copy(),
                         content=[TextBlock(text=orjson.dumps(step.value_json()).decode())])
        spend.stamp(answer)
        session.append(answer, rt.store, provider=answer.metadata.provider)
        result.produced.append(answer)
        result.final = answer
        result.stop_reason = "end_turn"
    except asyncio.CancelledError as cancel:
        if in_call and observer is not None:  # the call the cancel interrupted still happened
            result.llm_calls += observer.attempts
        out.attempts = runs.attempts() if runs is not None else []
        _keep_spend(rt, session, result, spend, last, MessageStatus.CANCELLED)
        reason = cancel_reason(cancel)
        result.cancelled, result.cancel_reason, result.stop_reason = True, reason, "cancelled"
        session.turn_count += 1
        recorder.emit("turn.cancelled", {
            "reason": reason, "partial_llm_calls": 1 if in_call else 0, "partial_tool_calls": 0,
        }, started, actor=cancel_actor(reason))
        return out
    except MetisError as error:
        if in_call and observer is not None:  # the failed attempts of the call that raised
            result.llm_calls += observer.attempts
        result.error = str(error)
        result.failure = error
        _keep_spend(rt, session, result, spend, last, MessageStatus.ERROR)
    out.attempts = runs.attempts() if runs is not None else []
    session.turn_count += 1
    if before_completed is not None:
        before_completed(result, recorder, started)
    runner._completed(recorder, started, result, clock)
    return out
