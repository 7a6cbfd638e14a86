"""Sessions: create, resume, swap models, end — with session.* events and everything persisted.

A Session is the in-memory view of one stored conversation: its history, its canonical ⇄
provider tool-id map, its sticky `/model` choice and its confirmation approvals. Resuming in a new
process rebuilds all of that from the store, so a conversation continues on any provider.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metis_core.adapters._common.token_estimate import estimate_tokens
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.agent.confirmation import ConfirmationPolicy
from metis_core.agent.system_prefix import build_prefix_parts
from metis_core.agent.tools.base import ToolContext
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.errors import CapabilityMismatchError
from metis_core.events.envelope import Actor
from metis_core.events.redaction import redact
from metis_core.hashing import sha256_hex
from metis_core.messages import Message, Role
from metis_core.models.fit import check_fits
from metis_core.prompts import PromptPart, compose

if TYPE_CHECKING:
    from metis_core.agent.skills.session_skills import SkillState
    from metis_core.routing.engine import RoutingEngine
    from metis_core.store.records import SessionRecord
    from metis_core.store.sessions import SessionStore

IDLE_BATCH = 500
"""Idle sessions read and ended per query by `end_inactive`."""


@dataclass
class Session:
    id: str
    workspace: Path
    engine: RoutingEngine
    history: list[Message] = field(default_factory=list)
    tool_ids: ToolIdMap = field(default_factory=ToolIdMap)
    sticky_model: str | None = None
    confirmation: ConfirmationPolicy = field(default_factory=ConfirmationPolicy)
    turn_count: int = 0
    opened_at: float = field(default_factory=time.monotonic)
    command_timeout_seconds: float = 30.0
    parent_session_id: str | None = None
    """The planner session, when this is a delegated worker session."""
    delegate_model: str | None = None
    """A worker's tier model (id, alias or chain); it fills the routing chain's delegate_request slot."""
    tools: ToolRegistry | None = None
    """The tools this session offers; None means the runtime's registry."""
    prefix_parts: tuple[PromptPart, ...] = ()
    """Memory and skills, built at create/resume; composed into every turn's system prompt, never stored."""
    skills: SkillState | None = None
    """The skills found for this session and those loaded into its context."""
    pinned_ids: set[str] = field(default_factory=set)
    """User messages compaction always sends verbatim (`pin`; docs/context.md)."""
    compaction_trigger: str = "threshold"
    """Why the next compaction happens: "model_swap" after a swap to a smaller window."""

    def pin(self, message_id: str) -> None:
        """Keep a user message verbatim through every compaction; CompactionConfigError for any other id."""
        message = next((m for m in self.history if m.id == message_id), None)
        if message is None or message.role is not Role.USER:
            from metis_core.errors import CompactionConfigError

            raise CompactionConfigError(f"only a user message of this session can be pinned; {message_id!r} is not one")
        self.pinned_ids.add(message_id)

    def prefix_text(self) -> str:
        """The stable prefix as the model reads it (for /memory, tests and debugging)."""
        composition = compose(self.prefix_parts)
        return composition.text if composition is not None else ""

    @property
    def is_worker(self) -> bool:
        return self.parent_session_id is not None

    def append(self, message: Message, store: SessionStore, *, provider: str | None = None) -> None:
        """Persist one message (with its tool_call rows) and add it to the history."""
        provider_ids = {}
        if provider:
            for use in message.tool_uses():
                known = self.tool_ids.provider_id(provider, use.id)
                if known is not None:
                    provider_ids[use.id] = known
        store.append_message(message, provider_ids=provider_ids or None)
        self.history.append(message)

    def tool_context(self) -> ToolContext:
        return ToolContext(workspace=self.workspace, session_id=self.id,
                           command_timeout_seconds=self.command_timeout_seconds, session=self)


ModelSwapListener = Callable[["Session", str | None, str], None]
"""Called after a successful `/model` swap with the session, the previous and the new choice."""


class SessionManager:
    def __init__(self, runtime: Any) -> None:
        self.rt = runtime
        self.swap_listeners: list[ModelSwapListener] = []

    def create(
        self, workspace: Path, *, model: str | None = None, title: str | None = None,
        parent_session_id: str | None = None, delegate_model: str | None = None, tools: ToolRegistry | None = None,
        confirmation: ConfirmationPolicy | None = None, replay_of: str | None = None,
    ) -> Session:
        """A new session; a delegated worker names its planner, tier model, tools and confirmations;
        a `metis replay` run names the session it replays (`replay_of`)."""
        rt = self.rt
        workspace = workspace.resolve()
        engine = rt.engine_for(workspace)
        record = rt.store.create_session(workspace, active_model=model, title=title,
                                         parent_session_id=parent_session_id, replay_of=replay_of)
        session = Session(id=record.id, workspace=workspace, engine=engine, sticky_model=model,
                          confirmation=confirmation or rt.confirmation_policy(),
                          parent_session_id=parent_session_id, delegate_model=delegate_model, tools=tools)
        created = rt.bus.emit_new("session.created", {
            "workspace_path": str(workspace), "workspace_hash": sha256_hex(str(workspace)),
            "initial_active_model": model, "routing_policy_version": engine.policy.version,
        }, session_id=session.id, actor=Actor.SYSTEM)
        if not session.is_worker:
            rt.attach_prefix(session, build_prefix_parts(rt, session, created))
        return session

    def resume(self, session_id: str, *, workspace: Path | None = None) -> Session:
        rt = self.rt
        record = rt.store.get_session(session_id)
        root = Path(record.workspace_path) if workspace is None else workspace.resolve()
        history = rt.store.load_messages(session_id)
        session = Session(
            id=session_id, workspace=root, engine=rt.engine_for(root), history=history,
            tool_ids=ToolIdMap.from_dict(dict(record.tool_id_map)),
            sticky_model=record.active_model, confirmation=rt.confirmation_policy(),
            turn_count=sum(1 for m in history if m.role is Role.USER),
            parent_session_id=record.parent_session_id,
        )
        rt.bus.flush()
        last = rt.trace.replay(session_id)
        resumed = rt.bus.emit_new("session.resumed", {
            "workspace_hash": sha256_hex(str(root)), "last_event_id_at_resume": last[-1].id if last else None,
        }, session_id=session_id, actor=Actor.SYSTEM)
        if not session.is_worker:
            rt.attach_prefix(session, build_prefix_parts(rt, session, resumed))
        totals = rt.store.session_totals(session_id)
        rt.costs.seed(session_id, totals.cost_usd)
        return session

    def swap_model(self, session: Session, model: str) -> None:
        """`/model`: refuse with CapabilityMismatchError when the model cannot carry this history.

        The active model stays as it was on refusal, and routing.constraint_failure records what was
        asked and the missing capability (canonical format §8.4).
        """
        rt = self.rt
        members = session.engine.expand(model)
        capabilities = rt.registry.capabilities(members[0])
        tools = (session.tools or rt.tools).definitions()
        compactor = rt.compactor
        fits = compactor.floor_tokens(session, [], tools)  # a smaller window compacts instead of refusing
        try:
            check_fits(session.history, tools, capabilities, members[0], fits)
        except CapabilityMismatchError as error:
            rt.bus.emit_new("routing.constraint_failure", {
                "action": "model_swap", "requested": model, "candidate_model": members[0],
                "active_model": session.sticky_model,
                "validation_failure": session.engine.failure_for_capability(error.capability),
                "missing_capability": error.capability, "reason": redact(error.reason),
            }, session_id=session.id, actor=Actor.SYSTEM)
            raise
        previous = session.sticky_model
        if estimate_tokens(session.history, tools) > capabilities.max_context_tokens * compactor.settings.threshold:
            session.compaction_trigger = "model_swap"
        session.sticky_model = model
        rt.store.update_session(session.id, active_model=model)
        for listener in self.swap_listeners:
            listener(session, previous, model)

    def end_inactive(self, *, idle_hours: float | None = None, now: datetime | None = None) -> list[str]:
        """End every open session idle for `idle_hours` (config sessions.inactivity_timeout_hours) as
        `abandoned`, with session.ended; returns their ids. Ended sessions can still be resumed. A
        session another process ends or touches meanwhile is left to it (each is ended once)."""
        rt = self.rt
        hours = rt.config.sessions.inactivity_timeout_hours if idle_hours is None else idle_hours
        cutoff = (now or datetime.now(UTC)) - timedelta(hours=hours)
        ended: list[str] = []
        while True:  # in batches: a store left for weeks may hold thousands
            batch = rt.store.idle_sessions(cutoff, limit=IDLE_BATCH)
            for record in batch:
                if rt.store.end_if_idle(record.id, cutoff):
                    self._emit_abandoned(record)
                    ended.append(record.id)
            if len(batch) < IDLE_BATCH:  # every one handled leaves the idle set, so this ends
                break
        return ended

    def _emit_abandoned(self, record: SessionRecord) -> None:
        turns = sum(1 for m in self.rt.store.load_messages(record.id) if m.role is Role.USER)
        self.rt.bus.emit_new("session.ended", {
            "disposition": "abandoned", "turn_count": turns, "total_cost_usd": float(record.total_cost_usd),
            "duration_seconds": round((record.updated_at - record.created_at).total_seconds(), 3),
        }, session_id=record.id, actor=Actor.SYSTEM)

    def end(self, session: Session, disposition: str = "completed") -> None:
        rt = self.rt
        rt.bus.flush()
        total = rt.costs.total(session.id)
        rt.bus.emit_new("session.ended", {
            "disposition": disposition, "turn_count": session.turn_count, "total_cost_usd": float(total),
            "duration_seconds": round(time.monotonic() - session.opened_at, 3),
        }, session_id=session.id, actor=Actor.SYSTEM)
        rt.store.end_session(session.id, disposition)
        rt.prefixes.pop(session.id, None)
