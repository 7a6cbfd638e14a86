"""Health tracker with a fake clock: benching, cooldown growth and cap, recovery, provider-wide benching."""

from __future__ import annotations

from typing import Any

import pytest

from metis_core.errors import (
    AuthenticationError,
    InvalidRequestError,
    NetworkError,
    RateLimitError,
    ServerError,
)
from metis_core.routing.health import HealthPolicy, HealthTracker


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def events() -> list[tuple[str, dict[str, Any], str | None]]:
    return []


@pytest.fixture
def tracker(clock: FakeClock, events: list[Any]) -> HealthTracker:
    policy = HealthPolicy(failure_threshold=3, base_cooldown_seconds=10, max_cooldown_seconds=35)
    return HealthTracker(policy, clock=clock, on_event=lambda t, p, parent: events.append((t, p, parent)))


def server_error() -> ServerError:
    return ServerError("overloaded", provider="anthropic", status=529)


M = "anthropic:claude-sonnet-4-6"


def test_consecutive_failures_past_threshold_bench_the_model(tracker: HealthTracker, events: list[Any]) -> None:
    for _ in range(2):
        tracker.record_failure(M, server_error(), parent_event_id="ev_fail")
    assert tracker.is_available(M)
    tracker.record_failure(M, server_error(), parent_event_id="ev_fail3")
    assert not tracker.is_available(M)
    unavailable = [e for e in events if e[0] == "routing.provider_unavailable"]
    assert unavailable == [("routing.provider_unavailable", {
        "provider": "anthropic", "scope": "model_specific", "models_affected": [M],
        "trigger_reason": "3_consecutive_failures"}, "ev_fail3")]


def test_cooldown_grows_exponentially_and_is_capped(tracker: HealthTracker, clock: FakeClock) -> None:
    durations = []
    for _ in range(3):
        tracker.record_failure(M, server_error())
    for _ in range(4):
        tracker.record_failure(M, server_error())  # ignored while benched: no escalation
        until = tracker.benched_until(M)
        assert until is not None
        durations.append(until - clock.now)
        clock.now = until + 0.001  # bench expires; one trial call fails again and re-benches
        assert tracker.is_available(M)
        tracker.record_failure(M, server_error())
    assert durations == [10, 20, 35, 35]


def test_success_resets_and_reports_recovery(tracker: HealthTracker, clock: FakeClock, events: list[Any]) -> None:
    for _ in range(3):
        tracker.record_failure(M, server_error())
    clock.now += 12
    tracker.record_success(M)
    assert tracker.consecutive_failures(M) == 0
    recovered = [e for e in events if e[0] == "routing.provider_recovered"]
    assert recovered[0][1] == {"provider": "anthropic", "scope": "model_specific", "models_recovered": [M],
                               "downtime_seconds": 12.0}
    for _ in range(3):  # bench count was reset: the next cooldown starts at the base again
        tracker.record_failure(M, server_error())
    assert tracker.benched_until(M) == clock.now + 10


def test_auth_error_benches_the_whole_provider(tracker: HealthTracker, events: list[Any]) -> None:
    tracker.record_failure(M, AuthenticationError("invalid x-api-key", provider="anthropic", status=401))
    assert not tracker.is_available(M)
    assert not tracker.is_available("anthropic:claude-haiku-4-5")
    assert tracker.is_available("openai:gpt-5")
    assert events[-1][1]["scope"] == "provider_wide" and events[-1][1]["trigger_reason"] == "auth_error"


def test_dns_failure_benches_the_whole_provider(tracker: HealthTracker, events: list[Any]) -> None:
    tracker.record_failure("openai:gpt-5", NetworkError("[Errno -2] Name or service not known", provider="openai"))
    assert not tracker.is_available("openai:gpt-4o")
    assert events[-1][1]["trigger_reason"] == "dns_error"


def test_several_failing_models_bench_the_provider(clock: FakeClock, events: list[Any]) -> None:
    policy = HealthPolicy(failure_threshold=1, provider_model_threshold=2, degraded_failure_count=99)
    tracker = HealthTracker(policy, clock=clock, on_event=lambda t, p, parent: events.append((t, p, parent)))
    tracker.record_failure("openai:gpt-5", ServerError("boom", provider="openai", status=500))
    tracker.record_failure("openai:gpt-4o", ServerError("boom", provider="openai", status=500))
    assert not tracker.is_available("openai:gpt-5-mini")
    wide = [e[1] for e in events if e[1].get("scope") == "provider_wide"]
    assert wide and wide[0]["trigger_reason"] == "multi_model_failures"


def test_rate_limit_retry_after_is_honoured(tracker: HealthTracker, clock: FakeClock) -> None:
    tracker.record_failure(M, RateLimitError("slow down", provider="anthropic", status=429, retry_after=7))
    assert tracker.benched_until(M) == clock.now + 7
    clock.now += 7.01
    assert tracker.is_available(M)


def test_invalid_request_does_not_count_against_health(tracker: HealthTracker) -> None:
    for _ in range(10):
        tracker.record_failure(M, InvalidRequestError("bad shape", provider="anthropic", status=400))
    assert tracker.is_available(M) and tracker.consecutive_failures(M) == 0


def test_degraded_is_reported_once_per_episode(tracker: HealthTracker, events: list[Any]) -> None:
    for _ in range(6):
        tracker.record_failure("gemini:gemini-2.5-flash", ServerError("x", provider="gemini", status=503))
    degraded = [e for e in events if e[0] == "provider.degraded"]
    assert len(degraded) == 1
    assert degraded[0][1] == {"provider": "gemini", "recent_failure_count": 3, "window_seconds": 60}
