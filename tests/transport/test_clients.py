"""The clients metis creates keep httpx's cookie behaviour while skipping the jar when nothing is set."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

from metis_core.transport.clients import MetisAsyncClient, MetisClient, SetCookieOnlyJar
from metis_core.transport.http import HttpTransport


class CookieServer:
    """Sets an affinity cookie on the first answer only; records the Cookie header of each request."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request.headers.get("cookie"))
        headers = {"set-cookie": "affinity=node-7; Path=/"} if len(self.seen) == 1 else {}
        return httpx.Response(200, json={"ok": True}, headers=headers)


def test_a_cookie_the_server_sets_is_kept_and_sent_back() -> None:
    server = CookieServer()
    with MetisClient(transport=httpx.MockTransport(server)) as client:
        for _ in range(3):
            client.post("http://api.test/v1/messages", content=b"{}")
        assert isinstance(client.cookies, SetCookieOnlyJar)
        assert client.cookies.get("affinity") == "node-7"
    assert server.seen == [None, "affinity=node-7", "affinity=node-7"]


def test_responses_without_set_cookie_leave_the_jar_alone() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"ok": True}, headers={"x-request-id": "req_1"})

    with MetisClient(transport=httpx.MockTransport(handler)) as client:
        client.post("http://api.test/v1/messages", content=b"{}")
        assert len(client.cookies) == 0


def test_cookies_assigned_by_the_caller_are_sent() -> None:
    server = CookieServer()
    with MetisClient(transport=httpx.MockTransport(server)) as client:
        client.cookies = {"team": "blue"}
        client.post("http://api.test/v1/messages", content=b"{}")
        assert isinstance(client.cookies, SetCookieOnlyJar)
    assert server.seen == ["team=blue"]


def test_the_async_client_behaves_the_same() -> None:
    server = CookieServer()

    async def run() -> str | None:
        async with MetisAsyncClient(transport=httpx.MockTransport(server)) as client:
            for _ in range(2):
                await client.post("http://api.test/v1/messages", content=b"{}")
            return client.cookies.get("affinity")

    assert asyncio.run(run()) == "node-7"
    assert server.seen == [None, "affinity=node-7"]


def test_async_http_httpx_makes_a_metis_async_client_on_the_first_async_call_and_closes_it() -> None:
    transport = HttpTransport(async_http="httpx")
    assert transport._async_client is None  # nothing made before it is needed

    async def run() -> None:
        client = transport._httpx_async()
        assert type(client) is MetisAsyncClient and transport._httpx_async() is client
        await transport.aclose()
        assert client.is_closed and transport._owned_async is None

    asyncio.run(run())
    with pytest.raises(ValueError, match="aiohttp' or 'httpx"):
        HttpTransport(async_http="requests")  # type: ignore[arg-type]


def test_the_transport_creates_metis_clients_and_keeps_a_callers_own() -> None:
    transport = HttpTransport()
    assert type(transport.client) is MetisClient
    assert type(transport.owned_async).__name__ == "OwnedAsyncClient"
    transport.close()
    own = httpx.Client()
    assert HttpTransport(own).client is own
    own.close()


def test_async_http_httpx_makes_one_client_per_event_loop_and_a_callers_pooled_client_is_bound_to_one() -> None:
    transport = HttpTransport(async_http="httpx")
    made: list[httpx.AsyncClient | None] = []

    async def on_a_loop() -> None:
        made.append(transport._httpx_async())
        assert transport._httpx_async() is made[-1]

    asyncio.run(on_a_loop())
    thread = threading.Thread(target=asyncio.run, args=(on_a_loop(),))  # a verifier's loop, on its own thread
    thread.start()
    thread.join(5)
    assert len(made) == 2 and made[0] is not made[1] and not transport.async_client_bound_to_one_loop
    asyncio.run(on_a_loop())
    assert len(transport._made_async) == 1, "the clients of closed loops are let go"
    pooled = httpx.AsyncClient()
    in_process = httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    assert HttpTransport(async_client=pooled)._httpx_async() is pooled
    assert HttpTransport(async_client=pooled).async_client_bound_to_one_loop
    assert not HttpTransport(async_client=in_process).async_client_bound_to_one_loop
    asyncio.run(pooled.aclose())
