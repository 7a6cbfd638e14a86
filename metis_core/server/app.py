"""`build_app`: the ASGI application of `metis serve` — every route in one table.

Routes: the web view (`/` and `/static/`), the event WebSocket (`/ws/events`), the JSON API
(`/api/...`), the console's API (`/api/console/...`) and chat (`/api/chat/...`). Errors become
JSON with the named error's message;
`WebGuard` (Host, Origin, content type, security headers) runs first, then the access middleware.
The app owns no runtime: the caller opens and closes it.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from metis_core.agent.runtime import Runtime
from metis_core.errors import GatewayError, MetisError, ServeAccessError, SessionNotFoundError
from metis_core.gateway.key_check import presented_token
from metis_core.gateway.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from metis_core.gateway.metrics import OperatorMetrics
from metis_core.gateway.web_guard import WebGuard, WebPolicy
from metis_core.server import api_routes, chat_routes, console_routes, gateway_routes
from metis_core.server.access import METRICS_PATH, AccessMiddleware, ServerAccess
from metis_core.server.client_stream import DEFAULT_CLIENT_QUEUE
from metis_core.server.event_socket import event_socket
from metis_core.server.wiring import ServerContext
from metis_core.trace.live_feed import LiveFeed

STATIC = Path(__file__).parent / "static"


async def index(request: Request) -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})


async def _metis_error(request: Request, error: Exception) -> Response:
    status = 403 if isinstance(error, ServeAccessError) else 404 if isinstance(error, SessionNotFoundError) else 400
    return JSONResponse({"error": type(error).__name__, "detail": str(error)}, status_code=status)


async def metrics_text(request: Request) -> Response:
    """`GET /metrics` (only when metrics are on): Prometheus text for the metrics bearer or an admin
    key (the access middleware lets this path through to this check)."""
    context: ServerContext = request.app.state.context
    assert context.metrics is not None
    access = context.access
    try:
        context.metrics.check_scrape(presented_token(request), access.keys.keys if access.keys else None)
    except GatewayError as error:
        return JSONResponse({"error": type(error).__name__, "detail": str(error)}, status_code=error.status,
                            headers={"www-authenticate": "Bearer"} if error.status == 401 else None)
    body = await anyio.to_thread.run_sync(context.metrics.render)
    return Response(body, headers={"content-type": METRICS_CONTENT_TYPE, "cache-control": "no-store"})


def routes() -> list[BaseRoute]:
    """The routes alone, for mounting under another app (the gateway)."""
    return [
        Route("/", index),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        WebSocketRoute("/ws/events", event_socket),
        *api_routes.ROUTES,
        *console_routes.ROUTES,
        *chat_routes.ROUTES,
        *gateway_routes.ROUTES,
    ]


def build_app(
    runtime: Runtime,
    *,
    access: ServerAccess | None = None,
    workspace: Path | None = None,
    client_queue: int = DEFAULT_CLIENT_QUEUE,
    policy: WebPolicy | None = None,
    live_feed: LiveFeed | None = None,
    metrics: OperatorMetrics | None = None,
) -> Starlette:
    """The app over an open runtime. Chat sessions it starts ask for tool confirmations over HTTP
    (its pending-confirmation registry); the runtime's own confirmer is left alone. `policy` adds
    the operator's allowed Host names and origins. `live_feed` (PostgreSQL; the caller opens and
    closes it) makes the WebSocket stream every process's stored events instead of this bus's.
    `metrics` (attached to the runtime's bus by the caller) adds `GET /metrics`."""
    context = ServerContext(runtime, access or ServerAccess(), workspace or Path.cwd(), client_queue,
                            live_feed=live_feed, metrics=metrics)
    app = Starlette(
        routes=[*routes(), *([Route(METRICS_PATH, metrics_text)] if metrics is not None else [])],
        middleware=[Middleware(WebGuard, policy=policy or WebPolicy()),
                    Middleware(AccessMiddleware, access=context.access)],
        exception_handlers={MetisError: _metis_error},
    )
    app.state.context = context
    return app
