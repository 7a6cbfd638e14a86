"""A fallback chain: several models that behave as one.

A call goes to the first healthy member; a retryable failure (rate limit, server error, overload,
network) or an auth failure moves to the next member, a context overflow moves to the next member
with a larger window, and an invalid request is raised (it would fail everywhere). Each member gets
its own settings and receives the history through its own adapter, so ids, signatures and lossy
projections follow that provider's rules. A stream that fails before its first token falls back;
one that fails later keeps its partial message and surfaces the error. The message names the model
that actually answered.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Protocol

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.client import ModelClient
from metis_core.adapters.stream_gate import error_from_event
from metis_core.errors import (
    AllModelsFailedError,
    AuthenticationError,
    CapabilityMismatchError,
    ContextOverflowError,
    ProviderError,
)
from metis_core.messages import (
    Message,
    MessageComplete,
    RoutingDecisionRecord,
    RoutingMode,
    StreamError,
    StreamEvent,
    ToolDefinition,
)
from metis_core.routing.health import HealthTracker
from metis_core.routing.policy_file import MemberSettings


class ChainObserver(Protocol):
    """Hooks for the caller's bookkeeping (the agent loop emits llm.call_* events from these)."""

    def attempt_started(self, model: str, attempt: int) -> None: ...

    def attempt_failed(self, model: str, error: BaseException) -> str | None:
        """Record the failure; return the id of the event it produced (parent for health events)."""
        ...


class _NoObserver:
    def attempt_started(self, model: str, attempt: int) -> None:
        return None

    def attempt_failed(self, model: str, error: BaseException) -> str | None:
        return None


def member_options(base: AdapterOptions, model: str, settings: MemberSettings | None) -> AdapterOptions:
    """The base options for `model`, with that member's own settings laid over them."""
    options = replace(base, model=model)
    if settings is None:
        return options
    for name in ("temperature", "max_tokens", "reasoning_effort", "thinking_budget_tokens"):
        value = getattr(settings, name)
        if value is not None:
            setattr(options, name, value)
    return options


class FallbackChain:
    def __init__(
        self,
        client: ModelClient,
        members: Sequence[str],
        *,
        health: HealthTracker | None = None,
        settings: dict[str, MemberSettings] | None = None,
    ) -> None:
        if not members:
            raise ValueError("a fallback chain needs at least one model")
        self.client = client
        self.members = list(dict.fromkeys(members))
        self.health = health
        self.settings = settings or {}

    # --- planning ---------------------------------------------------------------------------

    def _candidates(self) -> list[str]:
        if self.health is None:
            return list(self.members)
        healthy = [m for m in self.members if self.health.is_available(m)]
        return healthy or list(self.members)  # all benched: try anyway rather than refuse

    def _next_allowed(self, failed: str, error: BaseException, remaining: list[str]) -> list[str]:
        if isinstance(error, ContextOverflowError):
            window = self.client.registry.capabilities(failed).max_context_tokens
            return [m for m in remaining if self.client.registry.capabilities(m).max_context_tokens > window]
        return remaining

    @staticmethod
    def _routing_for(
        model: str, routing: RoutingDecisionRecord | None, tried: list[str], errors: list[BaseException]
    ) -> RoutingDecisionRecord | None:
        failures = [f"{m} ({e})" for m, e in zip(tried, errors, strict=True)]
        if not failures:
            return routing
        if routing is None:
            routing = RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=model, reason="fallback chain")
        return routing.model_copy(update={
            "chosen_model": model,
            "reason": f"{routing.reason}; fallback after {', '.join(failures)}",
            "alternatives_considered": [*routing.alternatives_considered, *tried],
        })

    def _fails_over(self, model: str, error: BaseException, observer: ChainObserver) -> bool:
        parent = observer.attempt_failed(model, error)
        if isinstance(error, ProviderError) and self.health is not None:
            self.health.record_failure(model, error, parent_event_id=parent)
        if isinstance(error, CapabilityMismatchError):
            return True
        if isinstance(error, ProviderError):
            return error.retryable or isinstance(error, AuthenticationError | ContextOverflowError)
        return False

    # --- calls ------------------------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDefinition] | None = None,
        options: AdapterOptions | None = None,
        tool_ids: ToolIdMap | None = None,
        session_id: str = "",
        routing: RoutingDecisionRecord | None = None,
        observer: ChainObserver | None = None,
    ) -> Message:
        watcher = observer or _NoObserver()
        base = options or AdapterOptions(model=self.members[0])
        remaining = self._candidates()
        errors: list[BaseException] = []
        tried: list[str] = []
        while remaining:
            model = remaining.pop(0)
            watcher.attempt_started(model, len(tried))
            try:
                message = self.client.complete(
                    messages, model, tools=tools, options=member_options(base, model, self.settings.get(model)),
                    tool_ids=tool_ids, session_id=session_id,
                    routing=self._routing_for(model, routing, tried, errors),
                )
            except (ProviderError, CapabilityMismatchError) as error:
                errors.append(error)
                tried.append(model)
                if not self._fails_over(model, error, watcher):
                    raise
                remaining = self._next_allowed(model, error, remaining)
                continue
            if self.health is not None:
                self.health.record_success(model)
            return message
        raise AllModelsFailedError(tried, errors)

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDefinition] | None = None,
        options: AdapterOptions | None = None,
        tool_ids: ToolIdMap | None = None,
        session_id: str = "",
        routing: RoutingDecisionRecord | None = None,
        observer: ChainObserver | None = None,
    ) -> Message:
        final: Message | None = None
        async for event in self.astream(messages, tools=tools, options=options, tool_ids=tool_ids,
                                        session_id=session_id, routing=routing, observer=observer, stream=False):
            if event.type == "message_complete":
                final = event.message
        assert final is not None
        return final

    async def astream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDefinition] | None = None,
        options: AdapterOptions | None = None,
        tool_ids: ToolIdMap | None = None,
        session_id: str = "",
        routing: RoutingDecisionRecord | None = None,
        observer: ChainObserver | None = None,
        stream: bool = True,
    ) -> AsyncIterator[StreamEvent]:
        """Stream from the first member that starts answering; fall back only before the first token."""
        watcher = observer or _NoObserver()
        base = options or AdapterOptions(model=self.members[0])
        remaining = self._candidates()
        errors: list[BaseException] = []
        tried: list[str] = []
        while remaining:
            model = remaining.pop(0)
            watcher.attempt_started(model, len(tried))
            call_routing = self._routing_for(model, routing, tried, errors)
            opts = member_options(base, model, self.settings.get(model))
            try:
                if stream:
                    events = self.client.astream(messages, model, tools=tools, options=opts, tool_ids=tool_ids,
                                                 session_id=session_id, routing=call_routing)
                    failed_mid_stream = False
                    async for event in events:
                        if isinstance(event, StreamError) and self.health is not None:
                            failed_mid_stream = True
                            self.health.record_failure(model, error_from_event(event, model.partition(":")[0]))
                        yield event
                    if failed_mid_stream:
                        return  # the partial message was surfaced; a mid-stream failure never falls back
                else:
                    message = await self.client.acomplete(messages, model, tools=tools, options=opts,
                                                          tool_ids=tool_ids, session_id=session_id,
                                                          routing=call_routing)
                    yield MessageComplete(message=message, stop_reason=message.metadata.stop_reason)
            except (ProviderError, CapabilityMismatchError) as error:
                errors.append(error)
                tried.append(model)
                if not self._fails_over(model, error, watcher):
                    raise
                remaining = self._next_allowed(model, error, remaining)
                continue
            if self.health is not None:
                self.health.record_success(model)
            return
        raise AllModelsFailedError(tried, errors)
