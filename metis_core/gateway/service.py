"""The gateway without HTTP: authenticate, resolve the model, admit, call upstream, record.

`GatewayService` holds the runtime (registry, client, bus, stores), the key service, the quota
gate and the writer thread; the Starlette app (app.py) only turns requests into calls of it and
its answers into responses. Upstream failures become GatewayError-like answers whose message has
been scrubbed of anything that looks like a key.
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from metis_core.adapters.client import SurveyedHistory
from metis_core.agent.redaction import redact
from metis_core.errors import (
    AliasCycleError,
    AllModelsFailedError,
    AuthenticationError,
    CapabilityMismatchError,
    ErrorClass,
    GatewayError,
    GatewayModelNotAllowedError,
    GatewayRequestError,
    GatewayUnknownModelError,
    MetisError,
    MissingAPIKeyError,
    ModelIdError,
    OutputSchemaError,
    OutputValidationError,
    ProviderError,
    ToolSchemaError,
    UnknownModelError,
)
from metis_core.gateway.call_budget import CallBudget, checked_max_tokens, worst_case
from metis_core.gateway.call_record import CallRecord
from metis_core.gateway.hosted_tool_asks import carry_web_search
from metis_core.gateway.key_check import MODEL_SCOPES, KeyCheck
from metis_core.gateway.keys import KeyService
from metis_core.gateway.quotas import QuotaGate, Subject
from metis_core.gateway.record_writer import MAX_BACKLOG, RecordWriter
from metis_core.gateway.shapes.base import InboundRequest, InboundShape
from metis_core.ids import new_session_id
from metis_core.messages import Message, Role, StreamEvent
from metis_core.routing.fallback import FallbackChain
from metis_core.store.gateway_keys import GatewayKeyRecord, GatewayKeyStore

if TYPE_CHECKING:
    from metis_core.agent.runtime import Runtime

log = logging.getLogger("metis_core.gateway")


DEFAULT_MAX_BODY_BYTES: Final = 20 * 1024 * 1024
POLICY_RECHECK_SECONDS: Final = 1.0


@dataclass(slots=True)
class GatewaySettings:
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Larger inbound bodies get 413 before they are read whole."""
    auth_failure_events_per_minute: int = 10
    """At most this many gateway.auth_failed events per minute per process; the rest are counted."""
    workspace: Path = field(default_factory=Path.cwd)
    """Where routing.yaml (aliases, chains) is read from."""
    record_backlog: int = MAX_BACKLOG
    """Record jobs not yet written past which new calls wait before they are admitted (record_writer.py)."""
    reservation_lease_seconds: float = 900.0
    """How long a call's budget reservation holds before it expires (a crashed process's is swept then)."""
    reserve_output_tokens: int | None = None
    """Output tokens reserved for a budgeted call that sets no max_tokens (default: the model's max output)."""
    unpriced_reserve_usd: Decimal | None = None
    """What a budgeted call to a model without a price reserves and is charged; None refuses such calls."""


@dataclass(slots=True)
class UpstreamFailure:
    """How an upstream failure is answered: status, kind (for the shape's error type), safe message."""

    status: int
    kind: str
    message: str
    retry_after: float | None = None


def upstream_failure(error: BaseException) -> UpstreamFailure:
    if isinstance(error, GatewayError):  # a refusal between two upstream calls (a budget top-up)
        return UpstreamFailure(error.status, error.kind, str(error), error.retry_after)
    if isinstance(error, AllModelsFailedError):
        last = error.errors[-1] if error.errors else None
        failure = upstream_failure(last) if last is not None else UpstreamFailure(502, "upstream", "")
        failure.message = redact(str(error))
        return failure
    if isinstance(error, OutputValidationError):  # the model's answers never fit the client's schema
        return UpstreamFailure(502, "upstream", redact(str(error)))
    if isinstance(error, CapabilityMismatchError | ToolSchemaError | OutputSchemaError):
        return UpstreamFailure(400, "invalid_request", redact(str(error)))
    if isinstance(error, MissingAPIKeyError):  # the operator's setup, not a crash; never its variable names
        return UpstreamFailure(404, "not_found", f"this gateway has no credentials for {error.provider}, so it cannot "
                                                 f"serve {error.provider} models; `GET /v1/models` lists what it "
                                                 f"serves, or ask its operator to add a key for {error.provider}")
    if isinstance(error, AuthenticationError):
        return UpstreamFailure(502, "upstream", f"{error.provider} refused the gateway's own credentials; "
                                                "the gateway operator must fix its provider key")
    if isinstance(error, ProviderError):
        status, kind = {
            ErrorClass.RATE_LIMIT: (429, "rate_limit"), ErrorClass.INVALID_REQUEST: (400, "invalid_request"),
            ErrorClass.CONTEXT_OVERFLOW: (400, "invalid_request"), ErrorClass.SERVER_ERROR: (529, "overloaded"),
            ErrorClass.NETWORK: (502, "upstream"),
        }.get(error.error_class, (502, "upstream"))  # fmt: skip
        return UpstreamFailure(status, kind, redact(str(error)), error.retry_after)
    return UpstreamFailure(500, "upstream", "the gateway failed to answer; the operator's log has the details")


class GatewayService:
    def __init__(self, runtime: Runtime, key_store: GatewayKeyStore, settings: GatewaySettings | None = None) -> None:
        self.rt = runtime
        self.settings = settings or GatewaySettings()
        self.key_store = key_store
        self.keys = KeyService(key_store, runtime.bus)
        self.quotas = QuotaGate(key_store, runtime.bus)
        self.engine = runtime.engine_for(self.settings.workspace)
        self.key_check = KeyCheck(self.keys, failure_events_per_minute=self.settings.auth_failure_events_per_minute)
        self.writer = RecordWriter(runtime.store, bus=runtime.bus, max_backlog=self.settings.record_backlog)
        self._policy_version, self._policy_read_at = "", -1e9
        self._resolved: dict[tuple[str, str, str], list[str]] = {}
        """(model asked, shape's provider, policy version) -> model ids; unknown names are not cached."""
        self._chains: dict[tuple[str, ...], FallbackChain] = {}

    # --- gates --------------------------------------------------------------------------------

    def authenticate(self, token: str | None, shape: InboundShape) -> GatewayKeyRecord:
        """The key of a `/v1` request: live, and of scope `model` or `admin` (a viewer key only reads)."""
        return self.key_check.check(token, shape.name, MODEL_SCOPES, "calling models through the gateway")

    def resolve(self, asked: object, shape: InboundShape) -> list[str]:
        """Model ids for the `model` field: an id, alias or chain, or a bare name of a known model."""
        if not isinstance(asked, str) or not asked.strip():
            raise GatewayRequestError("`model` must be a non-empty string naming a model, alias or chain")
        clock = time.monotonic()
        if clock - self._policy_read_at > POLICY_RECHECK_SECONDS:  # routing.yaml is re-read at most this often
            self._policy_version, self._policy_read_at = self.engine.policy.version, clock
        cache_key = (asked, shape.natural_provider, self._policy_version)
        found = self._resolved.get(cache_key)
        if found is None:
            found = self._resolve(asked, shape)
            if len(self._resolved) >= 4096:
                self._resolved.clear()
            self._resolved[cache_key] = found
        return list(found)

    def _resolve(self, asked: str, shape: InboundShape) -> list[str]:
        try:
            return self.engine.expand(asked)
        except AliasCycleError as error:
            raise GatewayRequestError(str(error)) from None
        except (UnknownModelError, ModelIdError) as error:
            if ":" not in asked and "," not in asked:
                found = self._bare_name(asked, shape)
                if found is not None:
                    return [found]
            shown = error.without_operator_hint if isinstance(error, UnknownModelError) else str(error)
            raise GatewayUnknownModelError(  # not the operator's config path: clients read this
                f"{shown} `GET /v1/models` lists what this gateway serves."
            ) from None

    def _bare_name(self, name: str, shape: InboundShape) -> str | None:
        registry = self.rt.registry
        providers = [shape.natural_provider, *(p for p in registry.providers() if p != shape.natural_provider)]
        for provider in providers:
            candidate = f"{provider}:{name}"
            try:
                if registry.get(candidate).catalog_id is not None:
                    return candidate
            except (UnknownModelError, ModelIdError):
                continue
        return None

    @staticmethod
    def allowed_members(key: GatewayKeyRecord, asked: str, members: list[str]) -> list[str]:
        """The members the key may use; GatewayModelNotAllowedError when none."""
        patterns = key.allowed_models
        if not patterns:
            return members
        if any(fnmatch.fnmatchcase(asked, p) for p in patterns):
            return members
        allowed = [m for m in members if any(fnmatch.fnmatchcase(m, p) for p in patterns)]
        if not allowed:
            raise GatewayModelNotAllowedError(
                f"this key may not use {asked!r}; it may use {', '.join(patterns)}"
            )
        return allowed

    async def admit(self, key: GatewayKeyRecord, shape: InboundShape, asked: str) -> list[Subject]:
        """The call's quota subjects, once the record writer has room and the key's limits allow it.

        Waiting for room comes first (a no-op unless the record has fallen behind), so a call held
        back is counted against its rpm when it is let in, not while it waits."""
        await self.writer.room()
        subjects = self.quotas.subjects(key)
        self.quotas.admit(key, subjects, shape=shape.name, model=asked)
        return subjects

    def reserve(self, key: GatewayKeyRecord, subjects: list[Subject], shape: InboundShape, request: InboundRequest,
                members: list[str], asked: str) -> CallBudget:
        """The call's budget: its worst case held in every budget window it counts against, before any
        upstream traffic (GatewayBudgetError when it does not fit); nothing held for a key without one."""
        max_tokens = checked_max_tokens(request.options.max_tokens)
        if all(s.budget_usd is None or s.budget_period is None for s in subjects):
            return CallBudget(self.quotas, key, subjects)  # nothing to hold: tokens are counted, no more
        if not isinstance(request.messages, SurveyedHistory):
            request.messages = SurveyedHistory(request.messages, request.tools)  # open_call takes this survey
        settings = self.settings
        case = worst_case(members, request.messages.estimated_tokens, max_tokens, prices=self.rt.client.prices,
                          registry=self.rt.registry, output_cap=settings.reserve_output_tokens,
                          unpriced_reserve=settings.unpriced_reserve_usd)
        budget = CallBudget(self.quotas, key, subjects, case, lease_seconds=settings.reservation_lease_seconds)
        budget.reserve(shape=shape.name, model=asked)
        return budget

    # --- the call -----------------------------------------------------------------------------

    def read(self, shape: InboundShape, body: dict[str, object], members: list[str]) -> tuple[InboundRequest, str]:
        """The body in canonical form, and the session id its messages belong to."""
        problem = shape.body_problem(body)
        if problem is not None:
            raise GatewayRequestError(problem)
        session_id = new_session_id()
        provider, _, name = members[0].partition(":")
        model_name = name if provider == shape.natural_provider else str(body["model"])
        try:
            read = shape.read(body, model_name, session_id)
        except MetisError as error:
            raise GatewayRequestError(redact(str(error))) from None
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            raise GatewayRequestError(
                f"the request body does not have the {shape.name} shape ({type(error).__name__}: "
                f"{redact(str(error), 200)}); check it against the API reference"
            ) from None
        carry_web_search(read, members, shape.extra_providers)
        if read.options.extra and not all(m.partition(":")[0] in shape.extra_providers for m in members):
            log.info("not forwarding %s to %s: fields of the %s shape only", sorted(read.options.extra), members,
                     shape.name)
            read.options.extra = {}
        if not any(m.role is Role.USER for m in read.messages):
            raise GatewayRequestError("the request holds no user message metis can read; a conversation starts "
                                      "with one")
        return read, session_id

    def open_call(
        self, key: GatewayKeyRecord, shape: InboundShape, request: InboundRequest, session_id: str, asked: str,
    ) -> CallRecord:
        # One survey of the history: turn.started's estimate here, and the client's check and
        # translation take it too (SurveyedHistory) instead of walking the history again.
        history = request.messages
        if not isinstance(history, SurveyedHistory) or not history.still_fits(request.tools):
            request.messages = history = SurveyedHistory(request.messages, request.tools)
        record = CallRecord(self.rt, self.writer, key, shape.name, session_id, request, asked)
        record.begin(history.estimated_tokens)
        return record

    def chain(self, members: list[str]) -> FallbackChain:
        """The fallback chain over `members` (kept: a chain holds no state of its own between calls)."""
        key = tuple(members)
        found = self._chains.get(key)
        if found is None or found.client is not self.rt.client or found.health is not self.rt.health:
            if len(self._chains) >= 4096:
                self._chains.clear()
            found = self._chains[key] = FallbackChain(self.rt.client, members, health=self.rt.health)
        return found

    def events(self, record: CallRecord, members: list[str], *, stream: bool) -> AsyncIterator[StreamEvent]:
        request = record.request
        return self.chain(members).astream(
            request.messages, tools=request.tools, options=request.options, tool_ids=request.tool_ids,
            session_id=record.session_id, observer=record, stream=stream,
        )  # fmt: skip

    async def answer(self, record: CallRecord, members: list[str]) -> Message:
        """The one answer of a non-streamed call: `events(stream=False)`'s `MessageComplete`, made directly."""
        request = record.request
        return await self.chain(members).acomplete(
            request.messages, tools=request.tools, options=request.options, tool_ids=request.tool_ids,
            session_id=record.session_id, observer=record,
        )  # fmt: skip

    @staticmethod
    def charge(budget: CallBudget, answer: Message, *, more: bool = False) -> list[dict[str, Any]]:
        """Charge one upstream answer's price and tokens to the call's budget; the quota alerts it fired."""
        return budget.charge(answer, more=more)

    def drain(self) -> None:
        """Wait for every pending store write and event (tests, shutdown)."""
        self.writer.drain()
        self.rt.bus.flush()

    def close(self) -> None:
        self.writer.close()
        self.key_store.close()
        self.rt.close()

    async def aclose(self) -> None:
        """Shutdown on the serving loop: the upstream connections first (they live on it), then the rest."""
        await self.rt.client.aclose()
        self.close()
