"""`build_app`: the ASGI application of `metis serve` — every route in one table.

Routes: the web view (`/` and `/static/`), the event WebSocket (`/ws/events`), the JSON API
(`/api/...`), the console's API (`/api/console/...`) and chat (`/api/chat/...`). Errors become
JSON with the named error's message;
`WebGuard` (Host, Origin, content type, security headers) runs first, then the access middleware.
The app owns no runtime: the caller opens and closes it.
"""

from __future__ import annotations

from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from metis_core.agent.runtime import Runtime
from metis_core.errors import MetisError, ServeAccessError, SessionNotFoundError
from metis_core.gateway.web_guard import WebGuard, WebPolicy
from metis_core.server import api_routes, chat_routes, console_routes, gateway_routes
from metis_core.server.access import AccessMiddleware, ServerAccess
from metis_core.server.client_stream import DEFAULT_CLIENT_QUEUE
from metis_core.server.event_socket import event_socket
from metis_core.server.wiring import ServerContext

STATIC = Path(__file__).parent / "static"


async def index(request: Request) -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})


async def _metis_error(request: Request, error: Exception) -> Response:
    status = 403 if isinstance(error, ServeAccessError) else 404 if isinstance(error, SessionNotFoundError) else 400
    return JSONResponse({"error": type(error).__name__, "detail": str(error)}, status_code=status)


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
) -> Starlette:
    """The app over an open runtime. Chat sessions it starts ask for tool confirmations over HTTP
    (its pending-confirmation registry); the runtime's own confirmer is left alone. `policy` adds
    the operator's allowed Host names and origins."""
    context = ServerContext(runtime, access or ServerAccess(), workspace or Path.cwd(), client_queue)
    app = Starlette(
        routes=routes(),
        middleware=[Middleware(WebGuard, policy=policy or WebPolicy()),
                    Middleware(AccessMiddleware, access=context.access)],
        exception_handlers={MetisError: _metis_error},
    )
    app.state.context = context
    return app
