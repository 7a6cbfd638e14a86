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

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import fields
from operator import attrgetter
from types import TracebackType
from typing import Final, Protocol

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
    RoutingDecisionRecord,
    RoutingMode,
    StreamError,
    StreamEvent,
    ToolDefinition,
)
from metis_core.routing.fallback_stream import chain_stream
from metis_core.routing.health import HealthTracker
from metis_core.routing.policy_file import MemberSettings


class ChainObserver(Protocol):
    """Hooks for the caller's bookkeeping (the agent loop emits llm.call_* events from these)."""

    def attempt_started(self, model: str, attempt: int) -> None: ...

    def attempt_failed(self, model: str, error: BaseException) -> str | None:
        """Record the failure; return the id of the event it produced (parent for health events)."""
        ...


class MemberRequest(Protocol):
    """What one member is sent when the request depends on the model (a structured run's plan)."""

    @property
    def messages(self) -> Sequence[Message]: ...
    @property
    def tools(self) -> Sequence[ToolDefinition] | None: ...
    @property
    def options(self) -> AdapterOptions: ...


RequestFor = Callable[[str], MemberRequest]
"""Builds the request for a member, asked as the chain reaches it; what it raises counts as that
member's failure (a CapabilityMismatchError moves on like a provider error)."""


MEMBER_FAILURES: Final = (ProviderError, CapabilityMismatchError)
"""What counts as a member's failure (the chain may move on); anything else propagates at once."""


class _NoObserver:
    def attempt_started(self, model: str, attempt: int) -> None:
        return None

    def attempt_failed(self, model: str, error: BaseException) -> str | None:
        return None


_OPTION_FIELDS = [f for f in fields(AdapterOptions) if f.init]
assert _OPTION_FIELDS[0].name == "model" and not any(f.kw_only for f in _OPTION_FIELDS)
_OTHER_OPTIONS: Final = attrgetter(*(f.name for f in _OPTION_FIELDS[1:]))
"""Every option but `model`, read in one C call: `dataclasses.replace` walks the fields in Python on
every attempt (~3x the time of this copy, which is what it does: each field passed to __init__)."""


def member_options(base: AdapterOptions, model: str, settings: MemberSettings | None) -> AdapterOptions:
    """The base options for `model` (a copy: `dataclasses.replace(base, model=model)`), with that
    member's own settings laid over them; `base` itself when it is already `model`'s and the member
    has no settings (a named fast path, docs/gateway.md "What it costs": the copy would equal it, and
    nothing along a call changes the options it is given; a gateway call's one member is this case)."""
    if settings is None and base.model == model:
        return base
    options = AdapterOptions(model, *_OTHER_OPTIONS(base))
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

    def candidates(self) -> list[str]:
        if self.health is None or len(self.members) == 1:  # one member is tried whatever its health says
            return list(self.members)
        healthy = [m for m in self.members if self.health.is_available(m)]
        return healthy or list(self.members)  # all benched: try anyway rather than refuse

    def _attempts(self, options: AdapterOptions | None, routing: RoutingDecisionRecord | None,
                  observer: ChainObserver | None) -> _Attempts:
        return _Attempts(self, options or AdapterOptions(model=self.members[0]), routing, observer or _NoObserver())

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
        attempts = self._attempts(options, routing, observer)
        while (model := attempts.next()) is not None:
            with attempts.trying(model):
                return self.client.complete(messages, model, tools=tools, options=attempts.options(model),
                                            tool_ids=tool_ids, session_id=session_id, routing=attempts.routing(model))
        raise attempts.exhausted()

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
        """The non-streaming call directly, as `complete` makes it: the same attempts and bookkeeping as
        `astream(stream=False)`, without a generator between the caller and the one answer."""
        attempts = self._attempts(options, routing, observer)
        while (model := attempts.next()) is not None:
            with attempts.trying(model):
                return await self.client.acomplete(messages, model, tools=tools, options=attempts.options(model),
                                                   tool_ids=tool_ids, session_id=session_id,
                                                   routing=attempts.routing(model))
        raise attempts.exhausted()

    def astream(
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
        request_for: RequestFor | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Stream from the first member that starts answering; fall back only before the first token.
        `request_for(model)`, when given, builds each member's messages, tools and options in place of
        `messages`, `tools` and `options` (a request that depends on the model).
        An async generator (routing/fallback_stream.py)."""
        return chain_stream(self, messages, tools, options, tool_ids, session_id, routing, observer, stream,
                            request_for)

    def options_for(self, base: AdapterOptions, model: str) -> AdapterOptions:
        """`base` with `model` and its member settings (`member_options` with this chain's settings)."""
        return member_options(base, model, self.settings.get(model))


class _Attempts:
    """The bookkeeping of one call through a chain: which member next, what it is sent, what failed
    and why. Each member's call runs in `with attempts.trying(model):`, whose end says what it means."""

    def __init__(self, chain: FallbackChain, options: AdapterOptions, routing: RoutingDecisionRecord | None,
                 observer: ChainObserver) -> None:
        self.chain = chain
        self.base_options = options
        self.base_routing = routing
        self.observer = observer
        self.remaining = chain.candidates()
        self.tried: list[str] = []
        self.errors: list[BaseException] = []
        self.model = ""  # the member being tried
        self.broke_off = False  # whether its stream failed past the first token

    def next(self) -> str | None:
        if not self.remaining:
            return None
        model = self.remaining.pop(0)
        self.observer.attempt_started(model, len(self.tried))
        return model

    def options(self, model: str) -> AdapterOptions:
        """The call's options for `model`, with that member's settings."""
        return self.chain.options_for(self.base_options, model)

    def routing(self, model: str) -> RoutingDecisionRecord | None:
        """The routing record for this attempt: it names the failures that led here."""
        routing = self.base_routing
        if not self.tried:
            return routing
        if routing is None:
            routing = RoutingDecisionRecord(mode=RoutingMode.DEFAULT, chosen_model=model, reason="fallback chain")
        failures = ", ".join(f"{m} ({e})" for m, e in zip(self.tried, self.errors, strict=True))
        return routing.model_copy(update={
            "chosen_model": model,
            "reason": f"{routing.reason}; fallback after {failures}",
            "alternatives_considered": [*routing.alternatives_considered, *self.tried],
        })

    def trying(self, model: str) -> _Attempts:
        """The `with` block around the call to `model` (`__exit__` says what its end means)."""
        self.model, self.broke_off = model, False
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> bool:
        """A member's call has ended: an answer records its success (unless its stream broke off); a
        failure another member may answer is recorded and swallowed, so the loop goes on to that member;
        any other failure propagates."""
        if error is None:
            if not self.broke_off:
                self.succeeded(self.model)
            return False
        return isinstance(error, MEMBER_FAILURES) and self.failed(self.model, error)

    def failed(self, model: str, error: ProviderError | CapabilityMismatchError) -> bool:
        """Record the failure; whether moving to another member makes sense."""
        self.tried.append(model)
        self.errors.append(error)
        parent = self.observer.attempt_failed(model, error)
        health = self.chain.health
        if isinstance(error, ProviderError) and health is not None:
            health.record_failure(model, error, parent_event_id=parent)
        if isinstance(error, ProviderError) and not (
            error.retryable or isinstance(error, AuthenticationError | ContextOverflowError)
        ):
            return False
        if isinstance(error, ContextOverflowError):  # only a larger window can help
            capabilities = self.chain.client.registry.capabilities
            window = capabilities(model).max_context_tokens
            self.remaining = [m for m in self.remaining if capabilities(m).max_context_tokens > window]
        return True

    def note_mid_stream_failure(self, model: str, event: StreamError) -> None:
        """A stream failed past its first token: its partial message stands (no fallback), not as a success."""
        self.broke_off = True
        if self.chain.health is not None:
            self.chain.health.record_failure(model, error_from_event(event, model.partition(":")[0]))

    def succeeded(self, model: str) -> None:
        if self.chain.health is not None:
            self.chain.health.record_success(model)

    def exhausted(self) -> BaseException:
        """What to raise when no member answered: the one failure itself, or all of them."""
        if len(self.errors) == 1:
            return self.errors[0]
        return AllModelsFailedError(self.tried, self.errors)
