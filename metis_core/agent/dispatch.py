"""Tool dispatch: validate, confirm if the tool has side effects, run, record — concurrently.

Every tool_use from one response runs at the same time. Each yields a TOOL message for the model
and the events of the spec's examples: tool.called (parent llm.call_completed), the confirmation
pair when one was needed, then tool.completed or tool.failed (parent tool.called). Input that fails
its schema gets tool.input_invalid and an error result the model can correct from. A cancelled
call (Ctrl-C, even at its confirmation question) still settles: its result is kept in `settled`
so the turn can store an answer for every call it was given.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import orjson

from metis_core.agent.cancel_reasons import cancel_reason
from metis_core.agent.confirmation import ConfirmationAnswer, ConfirmationPolicy, ConfirmationRequest
from metis_core.agent.recording import TurnRecorder
from metis_core.agent.tools.base import ToolCallScope, ToolContext, ToolOutcome, extra_input_violations
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.events.envelope import Actor, Event
from metis_core.hashing import json_hash
from metis_core.ids import new_ulid
from metis_core.messages import ImageBlock, Message, TextBlock, ToolUseBlock, tool_result_message
from metis_core.messages.tool_input import tool_input_violations

SUMMARY_LIMIT = 200


@dataclass(slots=True)
class DispatchResult:
    message: Message
    last_event: Event | None
    succeeded: bool


def _summary(value: object) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"


class ToolDispatcher:
    def __init__(self, registry: ToolRegistry, confirmation: ConfirmationPolicy, context: ToolContext) -> None:
        self.registry = registry
        self.confirmation = confirmation
        self.context = context
        self.settled: dict[str, DispatchResult] = {}
        """Every call's result by tool_use id, as it settles (cancelled ones included)."""

    async def run_all(
        self, uses: list[ToolUseBlock], recorder: TurnRecorder, parent: Event | None
    ) -> list[DispatchResult]:
        results = list(await asyncio.gather(*(self.run_one(use, recorder, parent) for use in uses)))
        # Calls finish in any order but their results are stored in call order, and a session's
        # message ids must increase: stamp the ids now, in that order.
        for result in results:
            result.message = result.message.model_copy(update={"id": new_ulid()})
        return results

    async def run_one(self, use: ToolUseBlock, recorder: TurnRecorder, parent: Event | None) -> DispatchResult:
        session_id = recorder.session_id
        tool = self.registry.for_call(use.name)
        if tool is None:
            problems = [f"there is no tool named {use.name!r}; available: {', '.join(self.registry.names())}"]
        else:
            problems = tool_input_violations(tool.definition, use.input) or extra_input_violations(tool, use.input)
        if tool is None or problems:
            event = recorder.emit("tool.input_invalid", {"tool_name": use.name, "validation_errors": problems}, parent)
            text = "error: invalid tool input:\n" + "\n".join(f"- {p}" for p in problems)
            invalid = DispatchResult(tool_result_message(use.id, text, is_error=True, session_id=session_id), event,
                                     False)
            self.settled[use.id] = invalid
            return invalid

        definition = tool.definition
        called = recorder.emit("tool.called", {
            "tool_use_id": use.id, "tool_name": use.name, "input_hash": json_hash(use.input),
            "input_size_bytes": len(orjson.dumps(use.input)), "side_effects": definition.side_effects.value,
        }, parent)
        started = time.perf_counter()

        context = dataclasses.replace(self.context, call=ToolCallScope(use.id, recorder, parent))
        try:
            if definition.needs_confirmation and self.confirmation.needs_asking(use.name):
                refused = await self._confirm(use, recorder, called)
                if refused is not None:
                    return self._finish(use, refused, recorder, called, started)
            outcome = await tool.run(use.input, context)
        except asyncio.CancelledError:
            self._finish(use, ToolOutcome.failure("cancelled", "cancelled by the user"), recorder, called, started)
            raise
        except Exception as exc:  # a tool bug must not take the turn down
            outcome = ToolOutcome.failure("execution_error", f"{type(exc).__name__}: {exc}")
        return self._finish(use, outcome, recorder, called, started)

    async def _confirm(self, use: ToolUseBlock, recorder: TurnRecorder, called: Event | None) -> ToolOutcome | None:
        definition = self.registry.for_call(use.name).definition  # type: ignore[union-attr]
        expires = datetime.now(UTC) + timedelta(seconds=self.confirmation.timeout_seconds)
        path = use.input.get("path")
        command = use.input.get("command")
        writes = [path] if definition.side_effects.value == "write" and isinstance(path, str) else None
        request = ConfirmationRequest(
            request_id=new_ulid(), tool_use_id=use.id, tool_name=use.name, side_effects=definition.side_effects.value,
            input_summary=_summary(use.input),
            projected_modifications=writes,
            command_summary=command[:SUMMARY_LIMIT] if isinstance(command, str) else None,
            expires_at=expires, note=self.registry.undeclared_note(use.name),
        )
        requested = recorder.emit("tool.confirmation_requested", {
            "tool_use_id": use.id, "tool_name": use.name, "side_effects": request.side_effects,
            "confirmation_request_id": request.request_id, "input_summary": request.input_summary,
            "projected_modifications": request.projected_modifications,
            "command_summary": request.command_summary, "expires_at": expires,
        }, called)
        try:
            answer = await self.confirmation.ask(request)
        except asyncio.CancelledError as cancel:  # the turn ended at the question: a denial by whoever ended it
            reason = cancel_reason(cancel)
            ended = ConfirmationAnswer("deny") if reason == "user_cancel" else \
                ConfirmationAnswer("deny", by="policy", reason=reason)
            self._resolved(recorder, use, request, ended, requested)
            raise
        self._resolved(recorder, use, request, answer, requested)
        if answer.decision == "allow":
            return None
        if answer.decision == "timeout":
            return ToolOutcome.failure("confirmation_timeout", "the user did not answer the confirmation in time")
        if answer.by == "policy":
            why = answer.reason or "denied by policy"
            return ToolOutcome.failure("permission_denied", f"{use.name} was not run: {why}")
        return ToolOutcome.failure("user_denied", f"the user denied running {use.name}")

    @staticmethod
    def _resolved(recorder: TurnRecorder, use: ToolUseBlock, request: ConfirmationRequest,
                  answer: ConfirmationAnswer, requested: Event | None) -> None:
        recorder.emit("tool.confirmation_resolved", {
            "tool_use_id": use.id, "confirmation_request_id": request.request_id, "decision": answer.decision,
            "scope": answer.scope if answer.decision == "allow" else None,
            "responding_client_attach_token": None,
        }, requested, actor=Actor.SYSTEM if answer.by == "policy" else Actor.USER)

    def _finish(
        self, use: ToolUseBlock, outcome: ToolOutcome, recorder: TurnRecorder, called: Event | None, started: float
    ) -> DispatchResult:
        latency_ms = int((time.perf_counter() - started) * 1000)
        if outcome.is_error:
            event = recorder.emit("tool.failed", {
                "tool_use_id": use.id, "error_class": outcome.error_class or "execution_error",
                "error_message": outcome.content[:2000], "latency_ms": latency_ms,
            }, called, actor=Actor.TOOL)
        else:
            event = recorder.emit("tool.completed", {
                "tool_use_id": use.id, "success": True, "output_size_bytes": len(outcome.content.encode()),
                "latency_ms": latency_ms, "files_modified": outcome.files_modified,
                "command_executed": outcome.command_executed,
            }, called, actor=Actor.TOOL)
        content: str | list[TextBlock | ImageBlock] = outcome.blocks if outcome.blocks else outcome.content
        message = tool_result_message(use.id, content, is_error=outcome.is_error, session_id=recorder.session_id)
        settled = DispatchResult(message, event, not outcome.is_error)
        self.settled[use.id] = settled
        return settled
