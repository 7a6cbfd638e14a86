"""`metis gateway serve --web`: the gateway's app with the routes of `metis serve` mounted beside.

The gateway's routes (`/v1/...`, `/healthz`, `/readyz`) match first; everything else falls through
to the `metis serve` app, with its own access middleware, so gateway requests never meet it. Both
share the worker's Runtime (one bus, one trace) and its KeyCheck (one key cache, one auth-failure
limit). Only one worker: a WebSocket client must see the bus its events are emitted on. The bind
host reaches the factory as METIS_SERVE_BIND_HOST.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from starlette.routing import Mount

from metis_core.server.access import ServerAccess
from metis_core.server.app import build_app

if TYPE_CHECKING:
    from starlette.applications import Starlette

BIND_HOST_ENV = "METIS_SERVE_BIND_HOST"
FACTORY = "metis_core.server.gateway_mount:build_gateway_with_web"


def build_gateway_with_web() -> Starlette:
    """uvicorn's factory: the gateway's worker app, plus the web view, API and event stream."""
    from metis_core.gateway.serve import build_app as build_gateway

    gateway = build_gateway()
    service = gateway.state.service
    access = ServerAccess.for_bind(os.environ.get(BIND_HOST_ENV, "127.0.0.1"), service.key_check)
    web = build_app(service.rt, access=access, workspace=service.settings.workspace)
    gateway.router.routes.append(Mount("/", app=web))
    return gateway
