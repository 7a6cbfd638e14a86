"""`OperatorMetrics`: the Prometheus text endpoint `/metrics` of the gateway and of `metis serve`.

Off unless METIS_METRICS=1 (or `--metrics`); a scrape needs an admin-scoped gateway key or the
bearer in METIS_METRICS_BEARER. Request counts and latency are taken where the gateway answers (a
cached counter child per label set), quota refusals among them; everything about upstream calls,
tokens, cost and provider health is read from the bus's events on a batch subscriber's own thread, off the
request path. prometheus-client (the `metrics` extra) is imported only when metrics are on.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from metis_core.errors import ConfigError, GatewayAuthError, GatewayScopeError
from metis_core.events.envelope import Event
from metis_core.events.filters import EventFilter
from metis_core.events.subscription import Subscription

if TYPE_CHECKING:
    from metis_core.events.bus import EventBus, SubscriptionHandle
    from metis_core.gateway.keys import KeyService
    from metis_core.trace.live_feed import LiveFeed

METRICS_ENV: Final = "METIS_METRICS"
BEARER_ENV: Final = "METIS_METRICS_BEARER"
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
REQUEST_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
EVENT_TYPES: Final = ("llm.call_completed", "llm.call_failed", "gateway.auth_failed",
                      "routing.provider_unavailable", "routing.provider_recovered", "provider.degraded")
SCRAPE_NEEDS: Final = ("a scrape of /metrics needs an admin-scoped gateway key (`metis gateway keys issue "
                       "--scope admin`) or the bearer set in METIS_METRICS_BEARER, as `Authorization: Bearer`")


@dataclass(frozen=True)
class MetricsSettings:
    bearer: str | None = None
    """A scrape token besides admin keys (METIS_METRICS_BEARER); compared in constant time, never logged."""


def metrics_settings_from_env(enabled: bool = False) -> MetricsSettings | None:
    """The endpoint's settings when METIS_METRICS is on (or `enabled`), else None (no endpoint: 404)."""
    raw = os.environ.get(METRICS_ENV, "").strip().lower()
    if raw not in ("", "0", "1", "true", "false", "on", "off", "yes", "no"):
        raise ConfigError(f"{METRICS_ENV} must be 1 or 0 (got {raw!r}); set it to 1 to serve /metrics")
    if not (enabled or raw in ("1", "true", "on", "yes")):
        return None
    bearer = os.environ.get(BEARER_ENV, "").strip() or None
    if bearer is not None and len(bearer) < 16:
        raise ConfigError(f"{BEARER_ENV} must be at least 16 characters (a random token); or unset it and "
                          "scrape with an admin gateway key")
    return MetricsSettings(bearer)


class OperatorMetrics:
    """One process's metrics in a registry of its own. `attach(bus)` follows the events; the gateway
    calls `observe_request` once per answered request; `render()` is the scrape's body."""

    def __init__(self, settings: MetricsSettings, service: str) -> None:
        try:
            from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
            from prometheus_client.process_collector import ProcessCollector
        except ImportError:
            raise ConfigError("metrics need prometheus-client: pip install 'metis-core[metrics]' "
                              f"(or unset {METRICS_ENV} and drop --metrics)") from None

        self.settings = settings
        self.registry = registry = CollectorRegistry()
        ProcessCollector(registry=registry)
        Gauge("metis_build_info", "The process serving these metrics.", ["service"],
              registry=registry).labels(service).set(1)
        self.requests = Counter("metis_gateway_requests", "Gateway requests answered, by route, model asked, "
                                "provider and HTTP status.", ["route", "model", "provider", "status"],
                                registry=registry)
        self.errors = Counter("metis_gateway_errors", "Gateway requests answered with an HTTP error status.",
                              ["route", "status"], registry=registry)
        self.latency = Histogram("metis_gateway_request_duration_seconds", "Time from the request to the last "
                                 "byte of the answer (streams included), by route.", ["route"],
                                 buckets=REQUEST_BUCKETS, registry=registry)
        self.upstream_calls = Counter("metis_llm_calls", "Upstream model calls, by provider, model and outcome.",
                                      ["provider", "model", "outcome"], registry=registry)
        self.upstream_errors = Counter("metis_llm_call_errors", "Failed upstream model calls, by error class.",
                                       ["provider", "model", "error_class"], registry=registry)
        self.upstream_latency = Histogram("metis_llm_upstream_latency_seconds", "Latency of each upstream "
                                          "model call.", ["provider", "model"], buckets=REQUEST_BUCKETS,
                                          registry=registry)
        self.tokens = Counter("metis_llm_tokens", "Tokens of upstream model calls, by direction.",
                              ["provider", "model", "direction"], registry=registry)
        self.cost = Counter("metis_llm_cost_usd", "Cost of upstream model calls in USD (priced calls only).",
                            ["provider", "model"], registry=registry)
        self.quota_refusals = Counter("metis_gateway_quota_refusals", "Requests refused (429) by a key's, "
                                      "user's or team's budget or rate limit before any upstream call.", ["route"],
                                      registry=registry)
        self.auth_failures = Counter("metis_gateway_auth_failures", "Requests refused at the key check "
                                     "(as recorded: rate-limited like gateway.auth_failed).", ["reason"],
                                     registry=registry)
        self.provider_up = Gauge("metis_upstream_up", "1 while a provider answers, 0 once routing benches it.",
                                 ["provider"], registry=registry)
        self.provider_degraded = Counter("metis_upstream_degraded", "Times a provider was reported degraded.",
                                         ["provider"], registry=registry)
        self._children: dict[tuple[str, str, str, int], Callable[[float], None]] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "llm.call_completed": self._completed, "llm.call_failed": self._failed,
            "gateway.auth_failed": self._auth_failed,
            "routing.provider_unavailable": self._unavailable, "routing.provider_recovered": self._recovered,
            "provider.degraded": self._degraded,
        }

    # --- the request path ------------------------------------------------------------------

    def observe_request(self, route: str, model: str, provider: str, status: int, seconds: float) -> None:
        """Count one answered request: two increments on cached children (no label lookup per call).
        `model` is "" for a request refused before a call was opened (its model never resolved)."""
        key = (route, model, provider, status)
        observe = self._children.get(key)
        if observe is None:
            observe = self._children[key] = self._child(route, model, provider, status)
        observe(seconds)

    def _child(self, route: str, model: str, provider: str, status: int) -> Callable[[float], None]:
        count = self.requests.labels(route, model, provider, str(status)).inc
        timing = self.latency.labels(route).observe
        if status < 400:
            def observe(seconds: float) -> None:
                count()
                timing(seconds)
            return observe
        error = self.errors.labels(route, str(status)).inc
        if status == 429 and not model:  # refused before a call was opened: the gateway's own limits
            refused = self.quota_refusals.labels(route).inc

            def observe_refusal(seconds: float) -> None:
                count()
                error()
                refused()
                timing(seconds)
            return observe_refusal

        def observe_error(seconds: float) -> None:
            count()
            error()
            timing(seconds)
        return observe_error

    # --- the events (a batch subscriber's thread) -----------------------------------------

    def attach(self, bus: EventBus) -> SubscriptionHandle:
        return bus.subscribe(Subscription(EventFilter(event_types=EVENT_TYPES), self._on_event, "operator-metrics"))

    def _on_event(self, event: Event) -> None:
        self._handlers[event.type](event.payload)

    def _completed(self, p: dict[str, Any]) -> None:
        provider, model = str(p.get("provider", "")), str(p.get("model", ""))
        self.upstream_calls.labels(provider, model, "ok").inc()
        self.upstream_latency.labels(provider, model).observe(int(p.get("latency_ms") or 0) / 1000)
        self.tokens.labels(provider, model, "input").inc(int(p.get("input_tokens") or 0))
        self.tokens.labels(provider, model, "output").inc(int(p.get("output_tokens") or 0))
        if p.get("cost_usd") is not None:
            self.cost.labels(provider, model).inc(float(Decimal(str(p["cost_usd"]))))
        self.provider_up.labels(provider).set(1)

    def _failed(self, p: dict[str, Any]) -> None:
        provider, model = str(p.get("provider", "")), str(p.get("model", ""))
        self.upstream_calls.labels(provider, model, "error").inc()
        self.upstream_errors.labels(provider, model, str(p.get("error_class", ""))).inc()
        self.upstream_latency.labels(provider, model).observe(int(p.get("latency_ms") or 0) / 1000)

    def _auth_failed(self, p: dict[str, Any]) -> None:
        self.auth_failures.labels(str(p.get("reason", ""))).inc()

    def _unavailable(self, p: dict[str, Any]) -> None:
        self.provider_up.labels(str(p.get("provider", ""))).set(0)

    def _recovered(self, p: dict[str, Any]) -> None:
        self.provider_up.labels(str(p.get("provider", ""))).set(1)

    def _degraded(self, p: dict[str, Any]) -> None:
        self.provider_degraded.labels(str(p.get("provider", ""))).inc()

    def watch_live_feed(self, feed: LiveFeed) -> None:
        """`metis serve` on PostgreSQL: the live feed's reconnects and subscribed clients, read at scrape time."""
        from prometheus_client import Gauge

        Gauge("metis_live_feed_reconnects", "Times the live event feed reconnected to PostgreSQL.",
              registry=self.registry).set_function(lambda: feed.reconnects)
        Gauge("metis_live_feed_clients", "WebSocket clients fed by the live event feed.",
              registry=self.registry).set_function(lambda: feed.subscribers)

    # --- the scrape ------------------------------------------------------------------------

    def check_scrape(self, token: str | None, keys: KeyService | None) -> None:
        """Pass for the configured bearer or an admin key; GatewayAuthError (401) for no token or an
        unknown one, GatewayScopeError (403) for a live key of another scope."""
        bearer = self.settings.bearer
        if token and bearer is not None and hmac.compare_digest(token.encode(), bearer.encode()):
            return
        if not token:
            raise GatewayAuthError(f"no key: {SCRAPE_NEEDS}", reason="missing_token")
        if keys is None:
            raise GatewayAuthError(f"not the metrics bearer: {SCRAPE_NEEDS}")
        record = keys.authenticate(token)
        if record.scope != "admin":
            raise GatewayScopeError(f"this key has scope {record.scope!r}; {SCRAPE_NEEDS}", key_id=record.id)

    def render(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)
