"""Health tracking for models and providers, with an injected clock.

Consecutive failures past a threshold bench a model for an exponential, capped cooldown; auth and
DNS failures, or several models of one provider failing, bench the whole provider. A rate limit's
Retry-After benches the model for exactly that long. Success resets. The tracker reports what it
decides through an `on_event(type, payload, parent_event_id)` callback so it needs no bus.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from metis_core.errors import AuthenticationError, NetworkError, ProviderError, RateLimitError
from metis_core.models.model_id import parse_model_id

EventSink = Callable[[str, dict[str, Any], str | None], None]


@dataclass(frozen=True, slots=True)
class HealthPolicy:
    failure_threshold: int = 5
    base_cooldown_seconds: float = 30.0
    cooldown_multiplier: float = 2.0
    max_cooldown_seconds: float = 600.0
    provider_model_threshold: int = 3
    """Distinct benched models of one provider that bench the whole provider."""
    degraded_window_seconds: int = 60
    degraded_failure_count: int = 3


@dataclass(slots=True)
class _Bench:
    until: float
    since: float
    models: list[str]


@dataclass(slots=True)
class _ModelState:
    consecutive_failures: int = 0
    bench_count: int = 0
    bench: _Bench | None = None


@dataclass(slots=True)
class _ProviderState:
    bench: _Bench | None = None
    bench_count: int = 0
    recent_failures: deque[float] = field(default_factory=deque)
    degraded: bool = False


def _is_dns_failure(error: ProviderError) -> bool:
    text = str(error).lower()
    return isinstance(error, NetworkError) and any(
        marker in text for marker in ("name or service not known", "nodename nor servname", "getaddrinfo", "dns")
    )


class HealthTracker:
    def __init__(
        self,
        policy: HealthPolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_event: EventSink | None = None,
    ) -> None:
        self.policy = policy or HealthPolicy()
        self._clock = clock
        self._on_event = on_event
        self._models: dict[str, _ModelState] = {}
        self._providers: dict[str, _ProviderState] = {}

    # --- queries ----------------------------------------------------------------------------

    def is_available(self, model: str) -> bool:
        provider = self._providers.get(parse_model_id(model).provider)
        state = self._models.get(model)
        if (provider is None or provider.bench is None) and (state is None or state.bench is None):
            return True  # nothing benched: no clock to read (every call asks)
        now = self._clock()
        if provider and provider.bench and provider.bench.until > now:
            return False
        return not (state and state.bench and state.bench.until > now)

    def benched_until(self, model: str) -> float | None:
        """Clock time when the model becomes available again, or None if it is available."""
        now = self._clock()
        times = []
        provider = self._providers.get(parse_model_id(model).provider)
        if provider and provider.bench and provider.bench.until > now:
            times.append(provider.bench.until)
        state = self._models.get(model)
        if state and state.bench and state.bench.until > now:
            times.append(state.bench.until)
        return max(times) if times else None

    def consecutive_failures(self, model: str) -> int:
        state = self._models.get(model)
        return state.consecutive_failures if state else 0

    # --- updates ----------------------------------------------------------------------------

    def record_success(self, model: str) -> None:
        provider_key = parse_model_id(model).provider
        state = self._models.get(model)
        if state is None:  # not setdefault: no state made and thrown away on every call after the first
            state = self._models[model] = _ModelState()
        provider = self._providers.get(provider_key)
        # the clock only for a recovery to report (every call succeeds through here)
        now = self._clock() if state.bench is not None or (provider is not None and provider.bench is not None) else 0.0
        if state.bench is not None:
            self._emit_recovered(provider_key, "model_specific", [model], now - state.bench.since)
        state.consecutive_failures = 0
        state.bench_count = 0
        state.bench = None
        if provider is not None:
            if provider.bench is not None:
                self._emit_recovered(provider_key, "provider_wide", provider.bench.models, now - provider.bench.since)
                provider.bench = None
                provider.bench_count = 0
            provider.recent_failures.clear()
            provider.degraded = False

    def record_failure(self, model: str, error: ProviderError, *, parent_event_id: str | None = None) -> None:
        if not error.retryable and not isinstance(error, AuthenticationError) and not _is_dns_failure(error):
            return  # an invalid request says nothing about the model's health
        now = self._clock()
        provider_key = parse_model_id(model).provider
        provider = self._providers.setdefault(provider_key, _ProviderState())
        self._note_recent_failure(provider_key, provider, now, parent_event_id)

        if isinstance(error, AuthenticationError) or _is_dns_failure(error):
            trigger = "auth_error" if isinstance(error, AuthenticationError) else "dns_error"
            self._bench_provider(provider_key, provider, now, trigger, parent_event_id)
            return

        state = self._models.setdefault(model, _ModelState())
        if state.bench is not None and state.bench.until > now:
            return  # a call that was in flight when the bench began: no escalation
        state.consecutive_failures += 1
        probing = state.bench is not None  # the bench expired and this was the trial call
        if isinstance(error, RateLimitError) and error.retry_after:
            self._bench_model(model, state, now, error.retry_after, "rate_limited", parent_event_id)
        elif probing or state.consecutive_failures >= self.policy.failure_threshold:
            cooldown = min(
                self.policy.base_cooldown_seconds * self.policy.cooldown_multiplier**state.bench_count,
                self.policy.max_cooldown_seconds,
            )
            state.bench_count += 1
            self._bench_model(
                model, state, now, cooldown, f"{self.policy.failure_threshold}_consecutive_failures", parent_event_id
            )
        benched = [m for m, s in self._models.items()
                   if parse_model_id(m).provider == provider_key and s.bench and s.bench.until > now]
        if len(benched) >= self.policy.provider_model_threshold and not (provider.bench and provider.bench.until > now):
            self._bench_provider(provider_key, provider, now, "multi_model_failures", parent_event_id, benched)

    # --- internals --------------------------------------------------------------------------

    def _bench_model(
        self, model: str, state: _ModelState, now: float, seconds: float, trigger: str, parent: str | None
    ) -> None:
        already = state.bench is not None and state.bench.until > now
        since = state.bench.since if state.bench else now
        state.bench = _Bench(until=now + seconds, since=since, models=[model])
        if not already:
            self._emit("routing.provider_unavailable", {
                "provider": parse_model_id(model).provider, "scope": "model_specific",
                "models_affected": [model], "trigger_reason": trigger,
            }, parent)

    def _bench_provider(
        self, key: str, provider: _ProviderState, now: float, trigger: str, parent: str | None,
        models: list[str] | None = None,
    ) -> None:
        affected = models or sorted(m for m in self._models if parse_model_id(m).provider == key)
        cooldown = min(
            self.policy.base_cooldown_seconds * self.policy.cooldown_multiplier**provider.bench_count,
            self.policy.max_cooldown_seconds,
        )
        provider.bench_count += 1
        already = provider.bench is not None and provider.bench.until > now
        since = provider.bench.since if provider.bench else now
        provider.bench = _Bench(until=now + cooldown, since=since, models=affected)
        if not already:
            self._emit("routing.provider_unavailable", {
                "provider": key, "scope": "provider_wide", "models_affected": affected, "trigger_reason": trigger,
            }, parent)

    def _note_recent_failure(self, key: str, provider: _ProviderState, now: float, parent: str | None) -> None:
        window = self.policy.degraded_window_seconds
        provider.recent_failures.append(now)
        while provider.recent_failures and provider.recent_failures[0] < now - window:
            provider.recent_failures.popleft()
        if not provider.degraded and len(provider.recent_failures) >= self.policy.degraded_failure_count:
            provider.degraded = True
            self._emit("provider.degraded", {
                "provider": key, "recent_failure_count": len(provider.recent_failures), "window_seconds": window,
            }, parent)

    def _emit_recovered(self, key: str, scope: str, models: list[str], downtime: float) -> None:
        self._emit("routing.provider_recovered", {
            "provider": key, "scope": scope, "models_recovered": models, "downtime_seconds": round(downtime, 3),
        }, None)

    def _emit(self, event_type: str, payload: dict[str, Any], parent: str | None) -> None:
        if self._on_event is not None:
            self._on_event(event_type, payload, parent)
