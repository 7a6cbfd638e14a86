"""Errors of the async client path and of a fallback chain hold no transport exception and no key.

An error raised inside an `except` block, or after one in the same task, could chain a stale
`__context__`: the transport's own exception, whose request holds the auth headers. Over real HTTP on
127.0.0.1 through the owned aiohttp client: a refused connection, recorded error answers, a malformed
body, each also after an unrelated error was handled in the same task, and a chain whose every member fails.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from cli.replay_server import ANTHROPIC, ReplayServer, Reply

from metis_core.adapters.client import ModelClient
from metis_core.errors import MetisError
from metis_core.messages import user_message
from metis_core.routing.fallback import FallbackChain
from metis_core.transport.retry import RetryPolicy

KEY = "sk-ant-CHAIN-PROBE-0123456789abcdef"
MODEL = "anthropic:claude-haiku-4-5"
HISTORY = [user_message("hi")]
TRANSPORT_MODULES = ("aiohttp", "httpx", "httpcore")


def _closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def _chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _texts(value: Any, depth: int = 0) -> list[str]:
    """str and repr of a value and of what its attributes, args and containers hold (not its traceback)."""
    if depth > 4:
        return []
    texts = [str(value), repr(value)]
    parts: list[Any] = []
    if isinstance(value, BaseException):
        parts.extend(value.args)
        parts.extend(getattr(value, "__dict__", {}).values())
    elif isinstance(value, dict):
        parts.extend(value.keys())
        parts.extend(value.values())
    elif isinstance(value, list | tuple | set | frozenset):
        parts.extend(value)
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        parts.extend(vars(value).values())
    for part in parts:
        texts.extend(_texts(part, depth + 1))
    return texts


def _raised(make_call: Callable[[ModelClient], Awaitable[object]], base_url: str, after_a_handled_error: bool
            ) -> BaseException:
    async def scenario() -> BaseException:
        client = ModelClient(base_urls={"anthropic": base_url}, api_keys={"anthropic": KEY}, prices=None,
                             retry=RetryPolicy(max_retries=0))
        try:
            if after_a_handled_error:
                try:
                    raise LookupError("an unrelated error, handled before the call")
                except LookupError:
                    pass
            await make_call(client)
        except MetisError as error:
            return error
        finally:
            await client.aclose()
        raise AssertionError("the call did not fail")

    return asyncio.run(scenario())


def _assert_clean(error: BaseException) -> None:
    chain = _chain(error)
    kinds = [type(e).__module__ + "." + type(e).__qualname__ for e in chain]
    assert not [k for k in kinds if k.startswith(TRANSPORT_MODULES)], kinds
    assert not [e for e in chain if isinstance(e, LookupError)], kinds  # no stale context either
    assert not [text for e in chain for text in _texts(e) if KEY in text]


def _one_call(client: ModelClient) -> Awaitable[object]:
    return client.acomplete(HISTORY, MODEL)


def _chain_of_two(client: ModelClient) -> Awaitable[object]:
    return FallbackChain(client, [MODEL, "anthropic:claude-sonnet-4-5"]).acomplete(HISTORY)


@pytest.mark.parametrize("after_a_handled_error", [False, True])
@pytest.mark.parametrize("make_call", [_one_call, _chain_of_two], ids=["client", "fallback chain"])
def test_a_refused_connection_is_one_clean_error(make_call: Any, after_a_handled_error: bool) -> None:
    _assert_clean(_raised(make_call, _closed_port(), after_a_handled_error))


ANSWERS = {
    "401": Reply.recording("anthropic", "error__401_authentication_error.json", 401),
    "429": Reply.recording("anthropic", "error__429_rate_limit_error.json", 429),
    "404": Reply.recording("anthropic", "error__404_not_found_error.json", 404),
    "malformed 200": Reply(200, b'{"id": "msg_01', "application/json"),
}


@pytest.mark.parametrize("after_a_handled_error", [False, True])
@pytest.mark.parametrize("answer", list(ANSWERS))
@pytest.mark.parametrize("make_call", [_one_call, _chain_of_two], ids=["client", "fallback chain"])
def test_an_error_answer_is_a_clean_error(make_call: Any, answer: str, after_a_handled_error: bool) -> None:
    upstream = ReplayServer().start()
    upstream.script(ANTHROPIC, ANSWERS[answer], ANSWERS[answer])  # one per member of a chain
    try:
        _assert_clean(_raised(make_call, upstream.base_url, after_a_handled_error))
    finally:
        upstream.stop()
    assert all(seen.headers.get("x-api-key") == KEY for seen in upstream.requests)  # the key was sent
