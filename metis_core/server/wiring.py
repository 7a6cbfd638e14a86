"""`ServerContext`: what every route of `metis serve` reads — the runtime, access rules, the
pending confirmations and the workspace chat sessions run in. Held on `app.state.context`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from metis_core.agent.runtime import Runtime
from metis_core.agent.session import Session
from metis_core.gateway.metrics import OperatorMetrics
from metis_core.server.access import ServerAccess
from metis_core.server.client_stream import DEFAULT_CLIENT_QUEUE
from metis_core.server.pending_confirmations import PendingConfirmations
from metis_core.trace.live_feed import LiveFeed


@dataclass
class ServerContext:
    runtime: Runtime
    access: ServerAccess = field(default_factory=ServerAccess)
    workspace: Path = field(default_factory=Path.cwd)
    client_queue: int = DEFAULT_CLIENT_QUEUE
    confirmations: PendingConfirmations = field(default_factory=PendingConfirmations)
    chat_sessions: dict[str, Session] = field(default_factory=dict)
    """Sessions chatted with over HTTP, kept so their per-session confirmations survive between turns."""
    running_turns: set[str] = field(default_factory=set)
    live_feed: LiveFeed | None = None
    """On PostgreSQL, every process's stored events (the WebSocket's live source); None: this bus."""
    metrics: OperatorMetrics | None = None
    """`/metrics` when on (docs/gateway.md "Metrics")."""
