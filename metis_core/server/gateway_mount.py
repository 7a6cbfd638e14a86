"""`metis gateway serve --web`: the gateway's app with the routes of `metis serve` mounted beside.

The gateway's routes (`/v1/...`, `/healthz`, `/readyz`) match first; everything else falls through
to the `metis serve` app, with its own access middleware, so gateway requests never meet it. Both
share the worker's Runtime (one bus, one trace) and its KeyCheck (one key cache, one auth-failure
limit). Only one worker: a WebSocket client must see the bus its events are emitted on (on
PostgreSQL the stream is the live feed of every instance's stored events, closed at shutdown). The bind
host and port reach the factory as METIS_SERVE_BIND_HOST / METIS_SERVE_BIND_PORT; the factory
prints the web view's one-time launch link (the keyless local user's way in) on stderr.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.routing import Mount

from metis_core.gateway.web_guard import WebPolicy
from metis_core.server.access import ServerAccess, is_loopback
from metis_core.server.app import build_app
from metis_core.server.launch_secret import announce_links
from metis_core.trace.live_feed import LiveFeed, open_live_feed

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.types import Lifespan

BIND_HOST_ENV = "METIS_SERVE_BIND_HOST"
BIND_PORT_ENV = "METIS_SERVE_BIND_PORT"
FACTORY = "metis_core.server.gateway_mount:build_gateway_with_web"


def build_gateway_with_web() -> Starlette:
    """uvicorn's factory: the gateway's worker app, plus the web view, API and event stream."""
    from metis_core.gateway.serve import build_app as build_gateway

    gateway = build_gateway()
    service = gateway.state.service
    host = os.environ.get(BIND_HOST_ENV, "127.0.0.1")
    access = ServerAccess.for_bind(host, service.key_check)
    feed = open_live_feed(service.rt.database)  # PostgreSQL: every instance's events, live
    web = build_app(service.rt, access=access, workspace=service.settings.workspace, policy=WebPolicy.from_env(),
                    live_feed=feed)
    if feed is not None:
        gateway.state.live_feed = feed
        gateway.router.lifespan_context = _closing(gateway.router.lifespan_context, feed)
    if is_loopback(host) and BIND_PORT_ENV in os.environ:
        base = f"http://{'127.0.0.1' if host == 'localhost' else host}:{os.environ[BIND_PORT_ENV]}"
        announce_links(access.launch, base, sys.stderr.write)
    gateway.router.routes.append(Mount("/", app=web))
    return gateway


def _closing(inner: Lifespan[Any], feed: LiveFeed) -> Lifespan[Any]:
    """The gateway's lifespan, then the live feed closed."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        try:
            async with inner(app):
                yield
        finally:
            feed.close()

    return lifespan
