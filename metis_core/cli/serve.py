"""`metis serve`: the web view, JSON API, chat and live event WebSocket on one local port.

Binds 127.0.0.1:4100 by default. Another address needs an access token (`--token`, the
METIS_SERVE_TOKEN variable, or tokens made with `--new-token`, kept hashed in
METIS_HOME/serve-tokens.json). The server itself is `metis_core.server` (docs/serve.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from metis_core.cli.failures import guarded
from metis_core.cli.runtime_setup import load_cli_config, open_runtime
from metis_core.server.access import TOKEN_ENV, ServerAccess, TokenScope, create_token, load_token_file, token_hash
from metis_core.server.client_stream import DEFAULT_CLIENT_QUEUE


@guarded
def serve(
    host: Annotated[str, typer.Option(help="Address to bind; anything but loopback needs a token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 4100,
    token: Annotated[str | None, typer.Option(
        help=f"An admin access token clients must send (or set {TOKEN_ENV}); kept in memory as a hash only.",
        show_default=False)] = None,
    new_token: Annotated[bool, typer.Option(
        "--new-token", help="Create a token, store its hash in METIS_HOME, print it once and exit.")] = False,
    scope: Annotated[str, typer.Option(help="Scope of --new-token: admin (sees private content) or viewer.")]
    = "admin",
    client_queue: Annotated[int, typer.Option(
        help="Events buffered per WebSocket client before a slow client is dropped.")] = DEFAULT_CLIENT_QUEUE,
    workspace: Annotated[Path | None, typer.Option(
        help="Workspace of chat sessions started from the browser (default: the current directory).")] = None,
) -> None:
    """Serve the web view, JSON API, HTTP chat and live event stream."""
    config = load_cli_config()
    if new_token:
        if scope not in ("admin", "viewer"):
            raise typer.BadParameter("--scope must be admin or viewer")
        chosen: TokenScope = "admin" if scope == "admin" else "viewer"
        typer.echo(create_token(config.home, chosen))
        return
    hashes: dict[str, TokenScope] = dict(load_token_file(config.home))
    given = token or os.environ.get(TOKEN_ENV)
    if given:
        hashes[token_hash(given)] = "admin"
    access = ServerAccess.for_bind(host, hashes)

    import uvicorn

    from metis_core.server.app import build_app

    runtime = open_runtime(config)
    try:
        app = build_app(runtime, access=access, workspace=workspace, client_queue=client_queue)
        typer.echo(f"metis serve: http://{host}:{port}/ (Ctrl-C stops)")
        uvicorn.run(app, host=host, port=port, log_level="warning", ws="websockets-sansio")
    finally:
        runtime.close()


