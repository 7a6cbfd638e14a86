"""The assembled stack one process runs: config, registry, prices, bus, stores, client, tools.

`Runtime` wires the bus subscribers the spec lists (trace store writer and cost accumulator on the
fast path), checks the trace for gaps at startup, and builds a routing engine per workspace. It is
the one object the CLI, the demo and the tests create; closing it drains the bus and commits.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metis_core.adapters.client import ModelClient
from metis_core.agent.confirmation import ConfirmationPolicy, Confirmer, deny_all
from metis_core.agent.cost import CostAccumulator
from metis_core.agent.idle_sweep import IdleSweep
from metis_core.agent.route_advice import RouteAdviceAsker
from metis_core.agent.session import Session, SessionManager
from metis_core.agent.system_prefix import session_prefix_source
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.agent.turn import TurnRunner
from metis_core.config import MetisConfig, load_config, metis_home
from metis_core.errors import MetisError
from metis_core.events.bus import EventBus
from metis_core.events.envelope import SYSTEM_SESSION_ID, Actor
from metis_core.models.model_id import parse_model_id
from metis_core.models.pricing import PriceTable
from metis_core.models.registry import ModelRegistry
from metis_core.prompts import PromptComposer, PromptPart
from metis_core.routing.engine import RoutingEngine
from metis_core.routing.health import HealthTracker
from metis_core.routing.pattern_slot import PatternAdvisor
from metis_core.routing.policy_file import PolicyLoader
from metis_core.store.backend import DATABASE_URL_ENV, SharedDatabase
from metis_core.store.sessions import SessionStore
from metis_core.trace.store import TraceStore
from metis_core.transport.http import AsyncHttp

if TYPE_CHECKING:
    from metis_core.agent.compaction.compactor import Compactor
    from metis_core.agent.mcp.hub import McpHub

KEYLESS_PROVIDERS = frozenset({"ollama", "openai_compatible"})



class Runtime:
    def __init__(
        self,
        *,
        home: Path | None = None,
        config: MetisConfig | None = None,
        client: ModelClient | None = None,
        bus: EventBus | None = None,
        db_path: Path | None = None,
        confirmer: Confirmer = deny_all,
        approve_everything: bool = False,
        health: HealthTracker | None = None,
        configured_providers: set[str] | None = None,
        connect_mcp: bool = True,
        async_http: AsyncHttp = "aiohttp",
    ) -> None:
        """`configured_providers` overrides the key lookup (for a client built with explicit keys);
        `async_http` picks the HTTP library of the client made here (ModelClient)."""
        self.home = home or metis_home()
        self.home.mkdir(parents=True, exist_ok=True)
        self.config = config or load_config(self.home)
        self.registry = ModelRegistry.load(self.config)
        self.prices = PriceTable.load(self.config)
        self.bus = bus or EventBus()
        self.db_path = db_path or self.home / "metis.db"
        """The SQLite file when no database URL is configured (backups and scratch runs name it)."""
        self.database: Path | str = (
            db_path or os.environ.get(DATABASE_URL_ENV) or self.config.database_url or self.db_path
        )
        """Where sessions, the trace and the learning tables live: `db_path`, METIS_DATABASE_URL,
        `database_url:`, or db_path."""
        self.shared_database = SharedDatabase(self.database, pool_size=self.config.database_pool_size)
        """What every store of this runtime opens (sessions, trace, learning, gateway keys): on
        PostgreSQL one connection pool for all of them (docs/persistence.md "One pool per runtime")."""
        try:
            self.store = SessionStore(self.shared_database)
            self.trace = TraceStore(self.shared_database)
        except BaseException:
            opened = getattr(self, "store", None)
            if opened is not None:
                opened.close()
            self.shared_database.close()
            raise
        self.trace.attach(self.bus)
        self.costs = CostAccumulator()
        self.costs.attach(self.bus)
        self.current_session: contextvars.ContextVar[str] = contextvars.ContextVar(
            "metis_session", default=SYSTEM_SESSION_ID)
        self.health = health or HealthTracker(on_event=self._health_event)
        self.client = client or ModelClient(config=self.config, registry=self.registry, prices=self.prices,
                                            async_http=async_http)
        self.tools = ToolRegistry.with_builtins()
        self.prompts = PromptComposer()
        """Where templates, memory and skills add to each turn's system prompt (add_part / add_source)."""
        self.prefixes: dict[str, tuple[PromptPart, ...]] = {}
        """Each open session's stable parts (memory, skills), served to the composer by session id."""
        self.prompts.add_source(session_prefix_source(self.prefixes))
        self.mcp = self._start_mcp() if connect_mcp and self.config.mcp_servers else None
        if self.config.memory.enabled:
            from metis_core.agent.memory.tool import MemoryTool

            self.tools.register(MemoryTool(self.home, self.config.memory.max_bytes, self.config.memory.history_keep))
        if self.config.delegation.tiers:
            from metis_core.agent.delegation.tool import DelegateTool

            self.tools.register(DelegateTool(self))
        self.confirmer = confirmer
        self.approve_everything = approve_everything
        self.configured_providers = configured_providers
        self.pattern_advisor: PatternAdvisor | None = None
        """Answers the routing chain's `pattern` slot; set by the learning layer (metis_core/learning/)."""
        self.route_advice: RouteAdviceAsker | None = None
        """Asked when a rule outranks a pattern recommendation (`/route override|ignore` in the chat)."""
        self.learning: Any = None
        """The learning layer attached to this runtime, if any (a metis_core.learning LearningLoop)."""
        self.on_close: list[Callable[[], None]] = []
        """Run after the bus has drained on close (layers above, e.g. learning, release their stores)."""
        self.on_closing: list[Callable[[], None]] = []
        """Run first by `close`, while the bus still takes events: work that emits stops here."""
        self.idle_sweep: IdleSweep | None = None
        """The long-running servers' idle-session timer (`sweep_idle_sessions`)."""
        self._compactor: Compactor | None = None
        self.sessions = SessionManager(self)
        self.turns = TurnRunner(self)
        self.trace.check_gaps(self.bus)

    # --- wiring -----------------------------------------------------------------------------

    def _health_event(self, event_type: str, payload: dict[str, Any], parent: str | None) -> None:
        self.bus.emit_new(event_type, payload, session_id=self.current_session.get(), parent=parent,
                          actor=Actor.SYSTEM)

    def _policy_invalid(self, path: str, errors: list[str], using_last_known_good: bool) -> None:
        self.bus.emit_new("routing.policy_invalid", {
            "policy_path": path, "errors": errors, "using_last_known_good": using_last_known_good,
        }, session_id=self.current_session.get(), actor=Actor.SYSTEM)

    def _start_mcp(self) -> McpHub:
        from metis_core.agent.mcp.hub import McpHub

        hub = McpHub(self.config.mcp_servers, log_dir=self.home / "logs")
        hub.start()
        hub.register_into(self.tools)
        return hub

    @property
    def compactor(self) -> Compactor:
        """Keeps each request inside its model's window (config `compaction:`; docs/context.md)."""
        if self._compactor is None:
            from metis_core.agent.compaction.compactor import Compactor

            self._compactor = Compactor(self, self.config.compaction)
        return self._compactor

    def attach_prefix(self, session: Session, parts: tuple[PromptPart, ...]) -> None:
        session.prefix_parts = parts
        if parts:
            self.prefixes[session.id] = parts
        else:
            self.prefixes.pop(session.id, None)

    def is_configured(self, model: str) -> bool:
        provider = parse_model_id(model).provider
        if provider in KEYLESS_PROVIDERS or self.config.is_keyless(provider) or self.config.cloud_configured(provider):
            return True
        if self.configured_providers is not None:
            return provider in self.configured_providers
        return self.config.api_key(provider) is not None

    def engine_for(self, workspace: Path) -> RoutingEngine:
        return RoutingEngine(
            self.registry,
            loader=PolicyLoader(workspace, self.home, on_invalid=self._policy_invalid),
            health=self.health,
            global_default=self.config.default_model,
            is_configured=self.is_configured,
            advisor=self.pattern_advisor,
        )

    def confirmation_policy(self) -> ConfirmationPolicy:
        pre_approved = set(getattr(self.config, "pre_approved_tools", []) or [])
        return ConfirmationPolicy(confirmer=self.confirmer, pre_approved=pre_approved,
                                  approve_everything=self.approve_everything)

    # --- lifecycle --------------------------------------------------------------------------

    def sweep_idle_sessions(self, interval_seconds: float | None = None) -> IdleSweep | None:
        """End idle sessions now and on a timer until close (`metis serve`, `metis gateway serve`);
        the interval defaults to config sessions.sweep_interval_minutes (0: no timer, None returned)."""
        seconds = self.config.sessions.sweep_interval_minutes * 60 if interval_seconds is None else interval_seconds
        if seconds <= 0:
            return None
        if self.idle_sweep is None:
            self.idle_sweep = IdleSweep(self.sessions.end_inactive, seconds).start()
        return self.idle_sweep

    def close(self) -> None:
        for stop in self.on_closing:
            stop()
        self.on_closing.clear()
        if self.idle_sweep is not None:
            self.idle_sweep.stop()  # before the bus it emits on closes
            self.idle_sweep = None
        if not self.bus.closed:
            # Let batch subscribers (the learning layer) finish what they were handed while the bus
            # still accepts the events they emit: feedback → verdict → pattern outcome is a chain of
            # batch handlers, each emitting what the next reads; shutdown drains the rest.
            with contextlib.suppress(MetisError):
                self.bus.settle(timeout=30.0)
            self.bus.shutdown(drain=True)
        if self.mcp is not None:
            self.mcp.close()
        for release in self.on_close:
            release()
        self.on_close.clear()
        self.trace.close()  # its last batch is written before its view goes
        self.store.close()
        self.shared_database.close()  # the pool closes once every view opened from it is closed
        self.client.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
