"""One delegation: a worker session runs the task and its outcome is put on the planner's record.

The worker is a real session (its own id, `parent_session_id` = the planner's, its own events,
`is_worker` on its llm.call_started) that runs one turn under a budget of model calls and tokens.
The planner's record gets delegate.started (parent: the planner's llm.call_completed) and then
delegate.completed or delegate.failed (parent: delegate.started; or the llm.call_completed when
the failure comes before any worker exists). Cancelling the planner cancels the worker's turn.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from metis_core.adapters._common.token_estimate import estimate_tokens
from metis_core.agent.context import turn_needs
from metis_core.agent.delegation.tiers import resolve_tier, tier_spec, worker_tools
from metis_core.agent.tools.base import MAX_OUTPUT_BYTES, ToolCallScope, ToolOutcome, cap_output
from metis_core.agent.tools.workspace import confine
from metis_core.agent.turn import TurnLimits, TurnResult
from metis_core.errors import MetisError, NoModelForTierError, PathEscapeError
from metis_core.events.envelope import Actor, Event
from metis_core.messages import Message, Role, TextBlock
from metis_core.routing.engine import NoRoutableModelError

if TYPE_CHECKING:
    from metis_core.agent.session import Session

INSUFFICIENT_CONTEXT_MARK = "INSUFFICIENT_CONTEXT:"
MAX_REFERENCE_BYTES = 32 * 1024
WORKER_SYSTEM_PROMPT = (
    "You are a worker agent. A planner agent delegated one task to you. Do the task with the context "
    "and tools you have, then reply with the result only: it is returned to the planner verbatim. "
    f"If the task cannot be done because context is missing, reply with one line starting with "
    f"{INSUFFICIENT_CONTEXT_MARK} followed by exactly what you need."
)


@dataclass(frozen=True, slots=True)
class DelegationRequest:
    task: str
    tier: str
    context_mode: str
    references: list[str]
    allowed_tools: list[str] | None

    @classmethod
    def from_input(cls, tool_input: dict[str, Any]) -> DelegationRequest:
        return cls(task=tool_input["task"], tier=tool_input["tier"],
                   context_mode=tool_input.get("context_mode", "minimal"),
                   references=list(tool_input.get("references", [])),
                   allowed_tools=tool_input.get("allowed_tools"))


class DelegationFailed(Exception):
    def __init__(self, mode: str, message: str) -> None:
        self.mode = mode
        super().__init__(message)


class Delegation:
    """Runs one delegate() call for `planner` through the runtime `rt`."""

    def __init__(self, rt: Any, planner: Session, call: ToolCallScope, request: DelegationRequest) -> None:
        self.rt = rt
        self.planner = planner
        self.call = call
        self.request = request
        self.worker: Session | None = None
        self.started: Event | None = None
        self.result: TurnResult | None = None
        self.clock = time.perf_counter()

    async def run(self) -> ToolOutcome:
        try:
            prompt = self._prompt()
            answer = await self._run_worker(prompt)
        except DelegationFailed as failure:
            return self._failed(failure.mode, str(failure))
        return self._completed(answer)

    # --- steps -----------------------------------------------------------------------------

    def _prompt(self) -> str:
        request = self.request
        if request.context_mode == "explicit" and not request.references:
            raise DelegationFailed("insufficient_context", "context_mode explicit needs references: workspace "
                                                           "files whose contents the worker should see")
        parts = [f"Task:\n{request.task}"]
        for reference in request.references:
            if request.context_mode == "minimal":
                parts.append(f"Reference (read it with a tool if you need it): {reference}")
                continue
            try:
                path = confine(self.planner.workspace, reference)
                data = path.read_bytes()
            except (PathEscapeError, OSError) as error:
                raise DelegationFailed("insufficient_context", f"reference {reference!r} cannot be read: "
                                                               f"{error}") from None
            text = cap_output(data.decode("utf-8", "replace"), MAX_REFERENCE_BYTES)
            parts.append(f"Reference {reference}:\n```\n{text}\n```")
        return "\n\n".join(parts)

    async def _run_worker(self, prompt: str) -> str:
        rt, request, planner = self.rt, self.request, self.planner
        config = rt.config.delegation
        tools = worker_tools(planner.tools or rt.tools, config, request.allowed_tools)
        system = Message(role=Role.SYSTEM, content=[TextBlock(text=WORKER_SYSTEM_PROMPT)])
        user = Message(role=Role.USER, content=[TextBlock(text=prompt)])
        needs = turn_needs([system, user], tools.registry.definitions(), planner.workspace, prompt)
        try:
            decision = resolve_tier(planner.engine, config, request.tier, needs)
        except NoModelForTierError as error:
            raise DelegationFailed("no_model_available_for_tier", str(error)) from None

        worker = rt.sessions.create(
            planner.workspace, title=f"worker: {request.task[:60]}", parent_session_id=planner.id,
            delegate_model=tier_spec(config, request.tier), tools=tools.registry,
            confirmation=planner.confirmation,
        )
        self.worker = worker
        worker.append(system.model_copy(update={"session_id": worker.id}), rt.store)
        self.started = self.call.recorder.emit("delegate.started", {
            "tool_use_id": self.call.tool_use_id, "worker_session_id": worker.id, "tier": request.tier,
            "resolved_model": decision.chosen_model, "context_mode": request.context_mode,
            "context_reference_count": len(request.references),
            "task_size_tokens": estimate_tokens([user], []), "allowed_tool_count": len(tools.registry.names()),
            "dropped_tools": tools.dropped,
        }, self.call.caused_by, actor=Actor.SYSTEM)

        limits = TurnLimits(max_llm_calls=config.max_llm_calls, max_tokens=config.max_tokens)
        try:
            result = await rt.turns.run(worker, prompt, limits=limits)
        except NoRoutableModelError as error:  # the tier's model went away between the check and the turn
            raise DelegationFailed("no_model_available_for_tier", str(error)) from None
        except MetisError as error:
            raise DelegationFailed("worker_error", str(error)) from None
        self.result = result
        if result.cancelled:  # the planner's cancel reached the worker: pass on why (a timeout, a disconnect)
            reason = result.cancel_reason or "user_cancel"
            why = ("the user cancelled the turn" if reason == "user_cancel"
                   else f"the turn was cancelled ({reason})")
            self._failed("cancelled_by_user", f"{why} while the worker was running")
            raise asyncio.CancelledError(reason)
        stopped_at_max = result.final is not None and result.final.metadata.stop_reason == "max_tokens"
        if result.limit_reached == "tokens" or stopped_at_max:
            raise DelegationFailed("max_tokens_exceeded", result.error or "the worker's answer hit its output "
                                                                         "token limit before it finished")
        if result.error is not None:
            raise DelegationFailed("worker_error", result.error)
        answer: str = result.answer.strip()
        if answer.startswith(INSUFFICIENT_CONTEXT_MARK):
            raise DelegationFailed("insufficient_context", answer[len(INSUFFICIENT_CONTEXT_MARK):].strip())
        if not answer:
            raise DelegationFailed("worker_error", "the worker finished without an answer")
        return answer

    # --- outcomes --------------------------------------------------------------------------

    def _cost(self) -> tuple[str, str]:
        result = self.result
        if result is None:
            return "0", "unpriced"
        return format(result.cost_usd.normalize() if result.cost_usd else Decimal(0), "f"), \
            result.pricing_version or "unpriced"

    def _end_worker(self, disposition: str) -> None:
        if self.worker is not None:
            self.rt.sessions.end(self.worker, disposition)

    def _completed(self, answer: str) -> ToolOutcome:
        assert self.worker is not None and self.result is not None
        cost, pricing = self._cost()
        self._end_worker("completed")
        result = self.result
        self.call.recorder.emit("delegate.completed", {
            "tool_use_id": self.call.tool_use_id, "worker_session_id": self.worker.id, "success": True,
            "output_size_bytes": len(answer.encode()), "worker_total_cost_usd": cost, "pricing_version": pricing,
            "turn_count": self.worker.turn_count, "llm_call_count": result.llm_calls,
            "tool_call_count": result.tool_calls, "wall_time_seconds": round(time.perf_counter() - self.clock, 3),
            "model": result.model or "",
        }, self.started, actor=Actor.SYSTEM)
        return ToolOutcome(cap_output(answer, MAX_OUTPUT_BYTES))

    def _failed(self, mode: str, message: str) -> ToolOutcome:
        cost, pricing = self._cost()
        self._end_worker("abandoned" if mode == "cancelled_by_user" else "error")
        self.call.recorder.emit("delegate.failed", {
            "tool_use_id": self.call.tool_use_id, "worker_session_id": self.worker.id if self.worker else None,
            "failure_mode": mode, "error_message": message[:2000], "worker_total_cost_usd": cost,
            "pricing_version": pricing,
        }, self.started or self.call.caused_by, actor=Actor.SYSTEM)
        return ToolOutcome.failure("execution_error", f"delegation failed ({mode}): {message}")

