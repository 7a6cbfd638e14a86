"""Bounded retries for provider calls: exponential backoff with jitter, honouring Retry-After.

Only transient failures are retried — rate limits (429), server errors (5xx, Anthropic 529) and
network errors; never auth, invalid requests, context overflow or cancellation, which would fail
the same way again. The final error carries `retry_count`. Sleeping is injected so tests run
instantly. This module decides *whether* and *when*; it does not send anything itself.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from metis_core.errors import ProviderError

log = logging.getLogger("metis_core.transport.retry")

T = TypeVar("T")


async def _asyncio_sleep(seconds: float) -> None:
    """asyncio.sleep, imported on first use: sync-only callers never pay for importing asyncio."""
    import asyncio

    await asyncio.sleep(seconds)


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date.

    Header names match in any case, a plain dict's too. Returns None when no header is present or it
    cannot be read; never a negative number.
    """
    millis = _header(headers, "retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime  # only for the rare HTTP-date form

        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """`headers[name]` for a lower-case `name`, in any case: plain dicts are case-sensitive, httpx.Headers is not."""
    value = headers.get(name)
    if value is not None:
        return value
    for key, candidate in headers.items():
        if key.lower() == name:
            return candidate
    return None


@dataclass
class RetryPolicy:
    """How often and how patiently to retry a retryable ProviderError.

    Delay for attempt n (0-based) is `base_delay * 2**n`, capped at `max_delay`, scaled by a random
    factor in [1 - jitter, 1 + jitter]. A server's Retry-After wins over the computed delay; one
    longer than `max_retry_after` is not waited for — the error is raised so a caller can fall
    back to another model instead of stalling.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.2
    max_retry_after: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    async_sleep: Callable[[float], Awaitable[None]] = _asyncio_sleep
    random: Callable[[], float] = field(default=random.random, repr=False)

    def should_retry(self, error: ProviderError, attempt: int) -> bool:
        """True when `error` is transient and attempt `attempt` (0-based) may be followed by another."""
        if attempt >= self.max_retries or not error.retryable:
            return False
        return error.retry_after is None or error.retry_after <= self.max_retry_after

    def delay(self, error: ProviderError, attempt: int) -> float:
        if error.retry_after is not None:
            return error.retry_after
        backoff = min(self.max_delay, self.base_delay * (2.0**attempt))
        factor = 1.0 + self.jitter * (2.0 * self.random() - 1.0)
        return max(0.0, backoff * factor)

    def _note(self, error: ProviderError, attempt: int, wait: float) -> None:
        log.info(
            "retrying %s after %s (attempt %d of %d, waiting %.2fs)",
            error.provider, error.error_class.value, attempt + 1, self.max_retries, wait,
            extra={"provider": error.provider, "error_class": error.error_class.value, "status": error.status},
        )

    def backoff(self, error: ProviderError, attempt: int) -> None:
        """Sleep before retry number `attempt + 1`, or raise `error` (stamped) if none is allowed."""
        if not self.should_retry(error, attempt):
            error.retry_count = attempt
            raise error
        wait = self.delay(error, attempt)
        self._note(error, attempt, wait)
        self.sleep(wait)

    async def abackoff(self, error: ProviderError, attempt: int) -> None:
        if not self.should_retry(error, attempt):
            error.retry_count = attempt
            raise error
        wait = self.delay(error, attempt)
        self._note(error, attempt, wait)
        await self.async_sleep(wait)

    def call(self, attempt_once: Callable[[], T]) -> T:
        """Run `attempt_once` until it succeeds, a non-retryable error occurs or retries run out."""
        attempt = 0
        while True:
            try:
                return attempt_once()
            except ProviderError as error:
                self.backoff(error, attempt)
                attempt += 1

    async def acall(self, attempt_once: Callable[[], Awaitable[T]]) -> T:
        attempt = 0
        while True:
            try:
                return await attempt_once()
            except ProviderError as error:
                await self.abackoff(error, attempt)
                attempt += 1


NO_RETRY = RetryPolicy(max_retries=0)
