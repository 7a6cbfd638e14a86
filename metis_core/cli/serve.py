"""`metis serve`: the web view, JSON API, chat and live event WebSocket on one local port.

Binds 127.0.0.1:4100 by default. Clients authenticate with gateway keys of scope `admin` or
`viewer` (`metis gateway keys issue --scope admin`), checked against the configured database's key
store; another address needs at least one such key, live. The server itself is
`metis_core.server` (docs/serve.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from metis_core.cli.failures import guarded
from metis_core.cli.output import Terminal
from metis_core.cli.runtime_setup import load_cli_config, open_runtime
from metis_core.server.client_stream import DEFAULT_CLIENT_QUEUE

RETIRED_TOKEN_FILE = "serve-tokens.json"
RETIRED_TOKEN_ENV = "METIS_SERVE_TOKEN"


@guarded
def serve(
    host: Annotated[str, typer.Option(
        help="Address to bind; anything but loopback needs a live gateway key of scope admin or viewer.")]
    = "127.0.0.1",
    metrics: Annotated[bool, typer.Option("--metrics", help="Serve Prometheus metrics at /metrics (admin key or "
                                                            "METIS_METRICS_BEARER; also METIS_METRICS=1).")] = False,
    port: Annotated[int, typer.Option(help="TCP port.")] = 4100,
    require_key: Annotated[bool, typer.Option(
        "--require-key", help="Ask every client for a gateway key on a loopback bind too.")] = False,
    client_queue: Annotated[int, typer.Option(
        help="Events buffered per WebSocket client before a slow client is dropped.")] = DEFAULT_CLIENT_QUEUE,
    workspace: Annotated[Path | None, typer.Option(
        help="Workspace of chat sessions started from the browser (default: the current directory).")] = None,
    allowed_host: Annotated[list[str] | None, typer.Option(
        "--allowed-host", help="A Host name to answer to besides loopback and the bound address (repeatable; "
                               "`name` or `name:port`; also config `serve.allowed_hosts`).")] = None,
    allowed_origin: Annotated[list[str] | None, typer.Option(
        "--allowed-origin", help="An origin whose pages may write and open the event stream (repeatable; "
                                 "config `serve.allowed_origins`).")] = None,
) -> None:
    """Serve the web view, JSON API, HTTP chat and live event stream."""
    from metis_core.cli.listening import require_extra, run_until_stopped

    require_extra("serve", "metis serve")
    from metis_core.gateway.key_check import KeyCheck
    from metis_core.gateway.keys import KeyService
    from metis_core.gateway.metrics import OperatorMetrics, metrics_settings_from_env
    from metis_core.gateway.serve import settings_from_env
    from metis_core.server.access import ServerAccess
    from metis_core.store.gateway_keys import open_gateway_key_store

    metrics_settings = metrics_settings_from_env(metrics)
    config = load_cli_config()
    if (config.home / RETIRED_TOKEN_FILE).exists() or os.environ.get(RETIRED_TOKEN_ENV):
        Terminal.open(config).warn(
            f"{RETIRED_TOKEN_FILE} and {RETIRED_TOKEN_ENV} are no longer read: clients use gateway keys "
            "(`metis gateway keys issue --scope admin`); delete the file")
    runtime = open_runtime(config, async_http="aiohttp")  # a server: the least CPU per call
    store = open_gateway_key_store(runtime.shared_database)
    live_feed = None
    try:
        from metis_core.trace.live_feed import open_live_feed

        live_feed = open_live_feed(runtime.database)  # PostgreSQL: every instance's events, live
        operator_metrics = None
        if metrics_settings is not None:
            operator_metrics = OperatorMetrics(metrics_settings, "serve")
            operator_metrics.attach(runtime.bus)
            if live_feed is not None:
                operator_metrics.watch_live_feed(live_feed)
        per_minute = settings_from_env().auth_failure_events_per_minute
        keys = KeyCheck(KeyService(store, runtime.bus), failure_events_per_minute=per_minute)
        access = ServerAccess.for_bind(host, keys, require_key=require_key)

        from metis_core.gateway.web_guard import WebPolicy
        from metis_core.server.app import build_app
        from metis_core.server.launch_secret import announce_links

        policy = WebPolicy().with_names([*config.serve.allowed_hosts, *(allowed_host or [])],
                                        [*config.serve.allowed_origins, *(allowed_origin or [])])
        app = build_app(runtime, access=access, workspace=workspace, client_queue=client_queue, policy=policy,
                        live_feed=live_feed, metrics=operator_metrics)
        runtime.sweep_idle_sessions()  # a server runs for days: idle sessions end on a timer
        base = f"http://{'127.0.0.1' if host == 'localhost' else host}:{port}"

        def announce() -> None:  # once the port listens
            typer.echo(f"metis serve: {base}/ (Ctrl-C stops)")
            if access.loopback_bind and not access.require_key:
                announce_links(access.launch, base, lambda text: typer.echo(text, nl=False))

        run_until_stopped(app, host=host, port=port, log_level="warning", access_log=False, ws="websockets-sansio",
                          announce=announce)
    finally:
        if live_feed is not None:
            live_feed.close()
        store.close()
        runtime.close()
