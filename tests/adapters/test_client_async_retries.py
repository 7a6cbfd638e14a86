"""`ModelClient.acomplete` runs RetryPolicy.acall's loop itself (no closure per call): it must retry,
stamp and raise as `acall` does, and a policy with its own `acall` is still the one that runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import pytest
from fixture_files import read_bytes
from mock_http import MODEL, serve

from metis_core.errors import ProviderError, RateLimitError
from metis_core.messages import user_message
from metis_core.transport.retry import RetryPolicy

T = TypeVar("T")
HISTORY = [user_message("hi")]


def overloaded() -> httpx.Response:
    return httpx.Response(529, content=read_bytes("anthropic", "error__529_overloaded_error.json"))


def rate_limited() -> httpx.Response:
    return httpx.Response(429, headers={"retry-after": "0"},
                          content=b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}')


def ok_text() -> httpx.Response:
    return httpx.Response(200, content=read_bytes("anthropic", "response__text.json"))


def policy(waits: list[float], retries: int = 2) -> RetryPolicy:
    async def wait(seconds: float) -> None:
        waits.append(seconds)

    return RetryPolicy(max_retries=retries, async_sleep=wait, random=lambda: 0.5)


async def test_a_transient_failure_is_retried_then_answered() -> None:
    waits: list[float] = []
    client, server = serve(overloaded(), rate_limited(), ok_text(), retry=policy(waits))
    message = await client.acomplete(HISTORY, model=MODEL)
    assert message.text() and len(server.requests) == 3
    assert waits == [0.5, 0.0]  # backoff for the 529, the server's retry-after for the 429


async def test_exhausted_retries_raise_the_last_error_stamped_as_acall_does() -> None:
    found: list[tuple[type[BaseException], int, int]] = []
    for direct in (True, False):
        waits: list[float] = []
        client, server = serve(overloaded(), retry=policy(waits))
        if not direct:  # the same policy through RetryPolicy.acall itself

            @dataclass
            class Through(RetryPolicy):
                async def acall(self, attempt_once: Callable[[], Awaitable[T]]) -> T:
                    return await RetryPolicy.acall(self, attempt_once)

            client.retry = Through(max_retries=2, async_sleep=client.retry.async_sleep, random=lambda: 0.5)
        with pytest.raises(ProviderError) as raised:
            await client.acomplete(HISTORY, model=MODEL)
        found.append((type(raised.value), raised.value.retry_count, len(server.requests)))
    assert found[0] == found[1] == (found[0][0], 2, 3)


async def test_a_policy_with_its_own_acall_is_the_one_that_runs() -> None:
    @dataclass
    class Counting(RetryPolicy):
        calls: list[int] = field(default_factory=list)

        async def acall(self, attempt_once: Callable[[], Awaitable[Any]]) -> Any:
            self.calls.append(1)
            return await attempt_once()

    counting = Counting(max_retries=5)
    client, server = serve(rate_limited(), ok_text(), retry=counting)
    with pytest.raises(RateLimitError):  # its acall does not retry at all
        await client.acomplete(HISTORY, model=MODEL)
    assert counting.calls == [1] and len(server.requests) == 1
