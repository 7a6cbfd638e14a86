"""RetryPolicy: what is retried, how long it waits, and what the final error says."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from metis_core.errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    NetworkError,
    ProviderError,
    RateLimitError,
    RequestCancelledError,
    ServerError,
)
from metis_core.transport.retry import RetryPolicy, parse_retry_after


class Recorder:
    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def policy(recorder: Recorder, **kwargs: object) -> RetryPolicy:
    return RetryPolicy(sleep=recorder.sleep, async_sleep=recorder.async_sleep, random=lambda: 0.5, **kwargs)  # type: ignore[arg-type]


def failing(errors: list[ProviderError], result: str = "ok"):  # type: ignore[no-untyped-def]
    calls = {"n": 0}

    def attempt() -> str:
        calls["n"] += 1
        if errors:
            raise errors.pop(0)
        return result

    return attempt, calls


def test_rate_limit_waits_exactly_the_retry_after_the_server_asked_for() -> None:
    rec = Recorder()
    attempt, calls = failing([RateLimitError("slow down", provider="anthropic", status=429, retry_after=3.0)])
    assert policy(rec).call(attempt) == "ok"
    assert rec.sleeps == [3.0]
    assert calls["n"] == 2


def test_overloaded_529_is_retried_with_exponential_backoff() -> None:
    rec = Recorder()
    errors: list[ProviderError] = [ServerError("Overloaded", provider="anthropic", status=529) for _ in range(2)]
    attempt, calls = failing(errors)
    assert policy(rec, base_delay=0.5).call(attempt) == "ok"
    assert rec.sleeps == [0.5, 1.0]  # random()=0.5 means no jitter
    assert calls["n"] == 3


def test_backoff_is_capped_and_jittered_within_bounds() -> None:
    p = RetryPolicy(base_delay=1.0, max_delay=4.0, jitter=0.25, random=lambda: 1.0)
    error = ServerError("x", provider="p", status=500)
    assert p.delay(error, 0) == pytest.approx(1.25)
    assert p.delay(error, 5) == pytest.approx(5.0)  # capped at 4, then +25%
    low = RetryPolicy(base_delay=1.0, max_delay=4.0, jitter=0.25, random=lambda: 0.0)
    assert low.delay(error, 1) == pytest.approx(1.5)


@pytest.mark.parametrize(
    "error",
    [
        AuthenticationError("bad key", provider="anthropic", status=401),
        InvalidRequestError("bad shape", provider="anthropic", status=400),
        ContextOverflowError("prompt is too long", provider="anthropic", status=400),
        RequestCancelledError("cancelled", provider="anthropic"),
    ],
)
def test_non_transient_errors_are_never_retried(error: ProviderError) -> None:
    rec = Recorder()
    attempt, calls = failing([error])
    with pytest.raises(type(error)) as raised:
        policy(rec).call(attempt)
    assert calls["n"] == 1
    assert rec.sleeps == []
    assert raised.value.retry_count == 0


def test_network_error_is_retried_and_final_error_carries_retry_count() -> None:
    rec = Recorder()
    errors: list[ProviderError] = [NetworkError(f"drop {i}", provider="openai") for i in range(3)]
    attempt, calls = failing(errors)
    with pytest.raises(NetworkError) as raised:
        policy(rec, max_retries=2).call(attempt)
    assert calls["n"] == 3
    assert raised.value.retry_count == 2
    assert str(raised.value).endswith("drop 2")


def test_retry_after_longer_than_the_limit_is_raised_at_once_for_fallback() -> None:
    rec = Recorder()
    attempt, calls = failing([RateLimitError("later", provider="openai", status=429, retry_after=3600.0)])
    with pytest.raises(RateLimitError):
        policy(rec, max_retry_after=60.0).call(attempt)
    assert calls["n"] == 1
    assert rec.sleeps == []


async def test_async_retries_use_the_async_sleep() -> None:
    rec = Recorder()
    errors: list[ProviderError] = [ServerError("boom", provider="gemini", status=503)]

    async def attempt() -> str:
        if errors:
            raise errors.pop(0)
        return "done"

    assert await policy(rec).acall(attempt) == "done"
    assert rec.sleeps == [0.5]


def test_retry_after_accepts_seconds_milliseconds_and_http_dates() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after": "Wed, 01 Jan 2025 12:00:30 GMT"}, now=now) == 30.0
    assert parse_retry_after({"retry-after": "Wed, 01 Jan 2025 11:00:00 GMT"}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_retry_after_headers_match_in_any_case_in_a_plain_dict() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"Retry-After-Ms": "250", "Retry-After": "9"}) == 0.25
    assert parse_retry_after({"Content-Type": "application/json"}) is None
