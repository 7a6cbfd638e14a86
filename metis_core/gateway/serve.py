"""Building and running the gateway process: the runtime under METIS_HOME, the app, uvicorn.

`build_app()` is the factory uvicorn imports in each worker (so `--workers N` runs N processes
sharing one metis.db: counters there are atomic). uvloop and httptools are used when installed
(the `gateway` extra brings them), else asyncio and h11. Settings come from the environment:
METIS_GATEWAY_MAX_BODY_BYTES, METIS_GATEWAY_AUTH_EVENTS_PER_MINUTE, METIS_GATEWAY_WORKSPACE,
METIS_GATEWAY_RECORD_BACKLOG, and for budget reservations METIS_GATEWAY_RESERVATION_LEASE_SECONDS,
METIS_GATEWAY_RESERVE_OUTPUT_TOKENS, METIS_GATEWAY_UNPRICED_RESERVE_USD, and METIS_METRICS /
METIS_METRICS_BEARER for `/metrics` (docs/gateway.md).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING

from metis_core.errors import ConfigError

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from metis_core.gateway.service import GatewaySettings


SWITCH_INTERVAL_SECONDS = 0.0005
GC_THRESHOLDS = (20000, 50, 10)
"""The collector's thresholds in a gateway worker (CPython's default: 700, 10, 10). See `tune_collector`."""


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number; unset it or give one") from None
    if value < 0:
        raise ConfigError(f"{name} must be zero or more")
    return value


def _usd_env(name: str) -> Decimal | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise ConfigError(f"{name}={raw!r} is not an amount in USD like 0.05; unset it or give one") from None
    if not value.is_finite() or value < 0:
        raise ConfigError(f"{name} must be a finite amount of zero or more")
    return value


def settings_from_env() -> GatewaySettings:
    from metis_core.gateway.record_writer import MAX_BACKLOG
    from metis_core.gateway.service import DEFAULT_MAX_BODY_BYTES, GatewaySettings

    workspace = Path(os.environ.get("METIS_GATEWAY_WORKSPACE") or Path.cwd())
    record_backlog = _int_env("METIS_GATEWAY_RECORD_BACKLOG", MAX_BACKLOG)
    if record_backlog < 1:
        raise ConfigError("METIS_GATEWAY_RECORD_BACKLOG must be at least 1 (record jobs a busy gateway may queue)")
    lease = _int_env("METIS_GATEWAY_RESERVATION_LEASE_SECONDS", 900)
    if lease < 1:
        raise ConfigError("METIS_GATEWAY_RESERVATION_LEASE_SECONDS must be at least 1 (how long a call's budget "
                          "reservation holds)")
    output_cap = _int_env("METIS_GATEWAY_RESERVE_OUTPUT_TOKENS", 0) or None
    return GatewaySettings(
        max_body_bytes=_int_env("METIS_GATEWAY_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES),
        auth_failure_events_per_minute=_int_env("METIS_GATEWAY_AUTH_EVENTS_PER_MINUTE", 10),
        workspace=workspace, record_backlog=record_backlog, reservation_lease_seconds=float(lease),
        reserve_output_tokens=output_cap, unpriced_reserve_usd=_usd_env("METIS_GATEWAY_UNPRICED_RESERVE_USD"),
    )


def build_app() -> Starlette:
    """One worker's app: a Runtime on METIS_HOME, its key store, and the routes."""
    from metis_core.agent.runtime import Runtime
    from metis_core.gateway.app import create_app
    from metis_core.gateway.metrics import OperatorMetrics, metrics_settings_from_env
    from metis_core.gateway.service import GatewayService
    from metis_core.store.gateway_keys import open_gateway_key_store

    # The record is written on background threads; a short switch interval hands the GIL back to
    # the event loop within 0.5 ms (not 5) when a request arrives while they work.
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    metrics_settings = metrics_settings_from_env()  # a bad setting fails before anything opens
    runtime = Runtime()
    runtime.sweep_idle_sessions()  # idle sessions of every process on this store end on a timer
    service = GatewayService(runtime, open_gateway_key_store(runtime.shared_database), settings_from_env())
    metrics = None
    if metrics_settings is not None:
        metrics = OperatorMetrics(metrics_settings, "gateway")
        metrics.attach(runtime.bus)
    app = create_app(service, metrics=metrics)
    tune_collector()
    return app


def tune_collector() -> None:
    """Keep the cyclic garbage collector from costing a third of a busy worker's CPU.

    With 64 calls in flight, each holding a few hundred container objects across its awaits, the
    default thresholds ran a generation-1 pass every ~7,000 allocations over everything in flight, and
    full passes over every object the process had ever kept (the registry, pydantic's schemas, the
    imported modules): measured, 35-40 % of the event loop's CPU at 64 clients (docs/gateway.md "What it
    costs"). What was built at start-up is moved out of the collector's sight (`gc.freeze`: it lives as
    long as the process anyway), and the young generations are collected less often. Garbage in cycles
    is still collected; it waits a little longer.

    The first threshold counts allocations net of deallocations, but a collection of the youngest
    generation walks every object made since the last one that is still alive, most of them held by
    the calls in flight: at 64 clients one at 5,000 walked tens of thousands of objects (~3 ms), 40
    times in 6,400 calls, 18-24 µs per call. At 20,000 the count rarely gets there (2 collections,
    ~2 µs per call); the cyclic garbage that waits for a collection is bounded by the same count.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def server_stack() -> tuple[str, str]:
    """(loop, http) implementations uvicorn should use: the fast ones when installed."""
    loop = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
    http = "httptools" if importlib.util.find_spec("httptools") is not None else "h11"
    return loop, http


def serve(host: str, port: int, workers: int, factory: str = "metis_core.gateway.serve:build_app") -> None:
    """Run uvicorn on `factory` (`metis gateway serve --web` passes the one that adds `metis serve`'s routes)."""
    try:
        import uvicorn
    except ImportError:
        raise ConfigError("the gateway needs its extra: pip install 'metis-core[gateway]'") from None
    loop, http = server_stack()
    uvicorn.run(factory, factory=True, host=host, port=port, workers=workers,
                loop=loop, http=http, log_level="warning", lifespan="on", access_log=False)
