"""Keeps a turn's request inside its model's window: trim old tool results, then summarise old turns.

Before each model call of a turn the compactor builds the request from the stored history
(view.py). Over `threshold` of the smallest window among the routed models it first trims old tool
results (no model call); if that is not enough it summarises everything but the system prompt, the
pinned messages and the last turns with a model, stores the summary as a compaction message (charged
like any call: llm.call_started / llm.call_completed, usage on the message, so `metis cost` shows it)
and records `memory.compacted` with the token counts before and after and the cost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from metis_core.adapters._common.token_estimate import estimate_tokens
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.token_count import count_input_tokens
from metis_core.agent.call_events import completed_payload
from metis_core.agent.compaction import view
from metis_core.agent.compaction.transcript import SUMMARY_INSTRUCTIONS, transcript_chunks
from metis_core.agent.recording import TurnRecorder
from metis_core.errors import MetisError
from metis_core.events.envelope import Actor, Event
from metis_core.ids import new_ulid
from metis_core.messages import (
    BlockOrigin,
    CompactionBlock,
    Message,
    MessageMetadata,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
    Role,
    RoutingDecisionRecord,
    RoutingMode,
    TextBlock,
    Usage,
)
from metis_core.messages.call_spend import CallSpend

if TYPE_CHECKING:
    from metis_core.agent.session import Session
    from metis_core.agent_config import CompactionConfig
    from metis_core.messages import ToolDefinition

log = logging.getLogger("metis_core.agent.compaction")
MIN_SUMMARY_WINDOW_SHARE = 0.5
"""A summarising call's transcript fills at most this share of the summariser's window (longer: in parts)."""


@dataclass
class Prepared:
    """The messages a call sends (after the system prompt), and the event the call descends from."""

    messages: list[Message]
    tokens: int
    parent: Event | None
    compacted: Event | None = None
    summary: Message | None = None
    """The compaction message stored for this call, carrying the summarising calls' usage and cost."""
    compact_at: int | None = None
    """Set when the provider compacts itself (compaction.native): the input tokens to ask it to act at."""


class Compactor:
    """One per runtime; `prepare` is called before every model call of a turn (and by /compact)."""

    def __init__(self, runtime: Any, settings: CompactionConfig) -> None:
        self.rt = runtime
        self.settings = settings
        self._trim_marks: dict[str, tuple[str | None, int]] = {}
        """session -> (summary id, tool results trimmed) of the last recorded trim: one event per change."""
        self._sent: dict[str, int] = {}
        """session -> the estimate of the last request sent, to compare with what the provider counted."""
        self._offsets: dict[str, tuple[str, int]] = {}
        """session -> (answer id, reported minus estimated input tokens): the provider's own overhead."""

    def window(self, models: Sequence[str]) -> int:
        """The smallest context window among the models a call may go to (its fallback chain)."""
        return min(int(self.rt.registry.capabilities(m).max_context_tokens) for m in models)

    def native(self, models: Sequence[str]) -> bool:
        """Every model the call may go to compacts on the provider's side (capability native_compaction)."""
        return all(self.rt.registry.capabilities(m).native_compaction for m in models)

    def record_native(self, recorder: TurnRecorder, parent: Event | None, answer: Message, prepared: Prepared,
                      models: Sequence[str]) -> Event | None:
        """memory.compacted for an answer in which the provider compacted the conversation itself (its
        compaction block now starts every request); its cost is inside that call's own usage."""
        usage = answer.metadata.usage
        return recorder.emit("memory.compacted", {
            "method": "provider", "trigger": "threshold", "model": answer.metadata.model,
            "window_tokens": self.window(models), "tokens_before": prepared.tokens,
            "tokens_after": usage.total_input_tokens if usage is not None else 0,
            "messages_summarised": len(prepared.messages), "messages_kept": 0, "tool_results_trimmed": 0,
            "compaction_message_id": answer.id, "cost_usd": 0.0, "pricing_version": "in_call",
        }, parent, actor=Actor.AGENT)

    def floor_tokens(self, session: Session, system: Sequence[Message], tools: Sequence[ToolDefinition]) -> int:
        """The fewest tokens this conversation can be compacted to: what routing and /model swaps check."""
        s = self.settings
        base = view.baseline(session.history, session.pinned_ids, s.pin_first_user_message)
        current = view.view_tokens(system, view.assemble(base, base.live), tools)
        if not s.enabled:
            return current + self._offsets.get(session.id, ("", 0))[1]
        live = base.live[view.kept_tail_start(base.live, 1):]
        trimmed, _ = view.trim_tool_results(live, s.tool_result_chars, len(live) - 1)
        pinned = estimate_tokens(base.pinned, []) if base.pinned else 0
        offset = self._offsets.get(session.id, ("", 0))[1]
        return min(current, view.view_tokens(system, trimmed, tools) + pinned + s.summary_max_tokens) + offset

    async def prepare(
        self, session: Session, system: list[Message], tools: list[ToolDefinition], models: Sequence[str],
        recorder: TurnRecorder, parent: Event | None, *, trigger: str = "threshold", force: bool = False,
    ) -> Prepared:
        s = self.settings
        base = view.baseline(session.history, session.pinned_ids, s.pin_first_user_message)
        messages = view.assemble(base, base.live)
        offset = self._offset(session)
        before = view.view_tokens(system, messages, tools) + offset
        if not s.enabled and not force:
            return self._sending(session, Prepared(messages, before, parent), offset)
        window = self.window(models)
        budget = int(window * s.threshold)
        native = s.native and not force and self.native(models)
        if (before <= budget or (native and before <= window)) and not force:
            # under the threshold; or every model compacts itself once the input passes it
            return self._sending(session, Prepared(messages, before, parent, compact_at=budget if native else None),
                                 offset)
        tail = view.kept_tail_start(base.live, s.keep_last_turns)
        trimmed_live, trimmed = view.trim_tool_results(base.live, s.tool_result_chars, tail)
        messages = view.assemble(base, trimmed_live)
        tokens = view.view_tokens(system, messages, tools) + offset
        if tokens > budget and not force:  # the estimate says summarise: an exact count, where one is free, decides
            counted = await count_input_tokens(self.rt.client, models[0], [*system, *messages], tools)
            tokens = counted if counted is not None else tokens
        if tokens <= budget and not force:
            mark = (base.summary_message_id, trimmed)
            compacted = None
            known = self._trim_marks.get(session.id)
            if trimmed and (known is None or known[0] != mark[0] or known[1] < trimmed):
                self._trim_marks[session.id] = mark
                compacted = self._record(recorder, parent, "trim_tool_results", trigger, None, window, before, tokens,
                                         0, len(messages), trimmed, None, CallSpend())
            return self._sending(session, Prepared(messages, tokens, compacted or parent, compacted), offset)
        keep = self._turns_to_keep(base, system, tools, budget - offset)
        cut = view.kept_tail_start(base.live, keep)
        covered = base.live[:cut]
        if not covered:  # only the current turn is left: cut its older tool results short too
            squeezed, _ = view.trim_tool_results(base.live, s.tool_result_chars, len(base.live) - 1)
            messages = view.assemble(base, squeezed)
            return self._sending(session, Prepared(messages, view.view_tokens(system, messages, tools) + offset,
                                                   parent), offset)
        model = session.engine.expand(s.model)[0] if s.model else models[0]
        try:
            text, spend, last = await self._summarise(session, recorder, parent, model, base, covered)
        except MetisError as error:  # the turn goes on with the trimmed view; the failure is on the record
            log.warning("compaction: the summarising call to %s failed: %s", model, error)
            return self._sending(session, Prepared(messages, tokens, parent), offset)
        stored = self._store(session, model, text, covered, base, spend)
        after_base = view.baseline(session.history, session.pinned_ids, s.pin_first_user_message)
        after_live, trimmed_after = view.trim_tool_results(
            after_base.live, s.tool_result_chars, view.kept_tail_start(after_base.live, keep))
        messages = view.assemble(after_base, after_live)
        after = view.view_tokens(system, messages, tools) + offset
        compacted = self._record(recorder, last, "summary", trigger, model, window, before, after, len(covered),
                                 len(after_live), trimmed_after, stored.id, spend)
        self._trim_marks.pop(session.id, None)
        return self._sending(session, Prepared(messages, after, compacted or parent, compacted, stored), offset)

    def _offset(self, session: Session) -> int:
        """What the provider counted beyond the estimate on this session's last answered request
        (tool-use system prompts, hosted tool definitions, tokenizer differences); 0 before one."""
        known = self._offsets.get(session.id)
        sent = self._sent.get(session.id)
        for message in reversed(session.history):
            usage = message.metadata.usage
            if message.role is not Role.ASSISTANT or usage is None or view.summary_block(message) is not None:
                continue
            if known is not None and known[0] == message.id:
                return known[1]
            if sent is None or not usage.total_input_tokens or _hosted(message):
                return known[1] if known is not None else 0
            # at most double the estimate, at least half of it: a reported figure far outside that range
            # counts something else (e.g. a provider's internal iterations), not this request's size
            offset = max(-sent // 2, min(usage.total_input_tokens - sent, sent))
            self._offsets[session.id] = (message.id, offset)
            return offset
        return 0

    def _sending(self, session: Session, prepared: Prepared, offset: int) -> Prepared:
        self._sent[session.id] = prepared.tokens - offset
        return prepared

    async def compact_now(self, session: Session) -> Prepared:
        """`/compact`: summarise all but the last turns now, whatever the size (the view it leaves)."""
        from metis_core.routing.engine import TurnNeeds

        tools = (session.tools or self.rt.tools).definitions()
        if session.sticky_model:
            models = session.engine.expand(session.sticky_model)
        else:
            models = session.engine.decide(TurnNeeds(has_tools=bool(tools), workspace=str(session.workspace))).members
        recorder = TurnRecorder(self.rt.bus, session.id)
        return await self.prepare(session, [], tools, models, recorder, None, trigger="manual", force=True)

    def _turns_to_keep(self, base: view.Baseline, system: list[Message], tools: list[ToolDefinition],
                       budget: int) -> int:
        """The most recent turns (at most keep_last_turns, at least the current one) that leave room for a summary."""
        s = self.settings
        for keep in range(max(s.keep_last_turns, 1), 1, -1):
            start = view.kept_tail_start(base.live, keep)
            live, _ = view.trim_tool_results(base.live[start:], s.tool_result_chars, 0)
            if view.view_tokens(system, live, tools) + s.summary_max_tokens <= budget:
                return keep
        return 1

    async def _summarise(
        self, session: Session, recorder: TurnRecorder, parent: Event | None, model: str, base: view.Baseline,
        covered: list[Message],
    ) -> tuple[str, CallSpend, Event | None]:
        """The rolling summary of `covered` (after the previous summary), one call per transcript part."""
        s = self.settings
        window = self.rt.registry.capabilities(model).max_context_tokens
        part_chars = max(int(window * MIN_SUMMARY_WINDOW_SHARE) * 4 - len(SUMMARY_INSTRUCTIONS), 4_000)
        summary = base.summary.text if base.summary is not None else ""
        spend = CallSpend()
        last = parent
        for part in transcript_chunks(covered, part_chars):
            prompt = (f"Summary so far:\n{summary}\n\nConversation to add to it:\n{part}" if summary
                      else f"Conversation to summarise:\n{part}")
            request = [Message(role=Role.SYSTEM, session_id=session.id, content=[TextBlock(text=SUMMARY_INSTRUCTIONS)]),
                       Message(role=Role.USER, session_id=session.id, content=[TextBlock(text=prompt)])]
            started = recorder.emit("llm.call_started", {
                "model": model, "provider": model.partition(":")[0],
                "estimated_input_tokens": estimate_tokens(request, []), "request_id": new_ulid(),
                "is_worker": session.is_worker,
            }, last, actor=Actor.AGENT)
            clock = time.perf_counter()
            try:
                answer = await self.rt.client.acomplete(
                    request, model, options=AdapterOptions(model=model, max_tokens=s.summary_max_tokens),
                    session_id=session.id)
            except MetisError as error:
                recorder.emit("llm.call_failed", {
                    "model": model, "provider": model.partition(":")[0],
                    "error_class": str(getattr(error, "error_class", "other")),
                    "error_message_redacted": type(error).__name__, "retry_count": getattr(error, "retry_count", 0),
                    "latency_ms": int((time.perf_counter() - clock) * 1000),
                }, started, actor=Actor.AGENT)
                raise
            spend.add(answer.metadata.usage)
            last = recorder.emit("llm.call_completed", completed_payload(answer), started, actor=Actor.AGENT)
            summary = answer.text().strip() or summary
        return summary, spend, last

    def _store(self, session: Session, model: str, text: str, covered: list[Message], base: view.Baseline,
               spend: CallSpend) -> Message:
        """The compaction message: the summary as a canonical compaction block, charged with its calls."""
        provider = model.partition(":")[0]
        block = CompactionBlock(text=text, origin=BlockOrigin(provider=provider, api=view.SUMMARY_API, model=model),
                                payload={"through_message_id": covered[-1].id, "messages_summarised": len(covered),
                                         "previous_summary_id": base.summary_message_id})
        mode = RoutingMode.MANUAL if self.settings.model else RoutingMode.DEFAULT
        routing = RoutingDecisionRecord(mode=mode, chosen_model=model, reason="summarising model of compaction")
        message = Message(role=Role.ASSISTANT, session_id=session.id, content=[block], metadata=MessageMetadata(
            model=model, provider=provider, stop_reason="end_turn", routing=routing,
            usage=spend.usage.model_copy() if spend.usage is not None else Usage()))
        spend.stamp(message)
        session.append(message, self.rt.store, provider=provider)
        return message

    @staticmethod
    def _record(recorder: TurnRecorder, parent: Event | None, method: str, trigger: str, model: str | None,
                window: int, before: int, after: int, summarised: int, kept: int, trimmed: int,
                message_id: str | None, spend: CallSpend) -> Event | None:
        usage = spend.usage
        cost = usage.cost_usd if usage is not None and usage.cost_usd is not None else Decimal(0)
        return recorder.emit("memory.compacted", {
            "method": method, "trigger": trigger, "model": model, "window_tokens": window,
            "tokens_before": before, "tokens_after": after, "messages_summarised": summarised,
            "messages_kept": kept, "tool_results_trimmed": trimmed, "compaction_message_id": message_id,
            "cost_usd": float(cost),
            "pricing_version": (usage.pricing_version if usage is not None else None) or "unpriced",
        }, parent, actor=Actor.USER if trigger == "manual" else Actor.AGENT)


def _hosted(message: Message) -> bool:
    """An answer with hosted-tool work: its reported input spans the provider's own inner calls."""
    return any(isinstance(b, ProviderToolCallBlock | ProviderToolResultBlock) for b in message.content)
