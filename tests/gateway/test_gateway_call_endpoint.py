"""A call route's `CallEndpoint` calls `GatewayApp.call` with a `CallRequest` (ASGI scope and receive),
where the general `Endpoint` builds a starlette `Request` and calls its handler (a `functools.partial` of
the same method). What a call leaves (response, events, store, charge) must be the same both ways, a
disconnect must still cancel the call, and an error that escapes must be the shape's own 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.requests import Request

from metis_core.gateway.app import (
    ANTHROPIC,
    OPENAI,
    RESPONSES,
    CallEndpoint,
    CallRequest,
    Endpoint,
    GatewayApp,
    create_app,
)

from .gateway_harness import GatewayHarness
from .test_gateway_direct_answer import CASES, assert_same, run_both
from .test_gateway_direct_dispatch import CHOSEN, HAIKU, _posted, asgi


@contextlib.contextmanager
def through_handler() -> Iterator[list[str]]:
    """Every call route through `Endpoint.__call__` (a starlette Request handed to the partial); yields
    the paths that went that way."""
    seen: list[str] = []

    async def general(self: CallEndpoint, scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["path"])
        await Endpoint.__call__(self, scope, receive, send)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(CallEndpoint, "__call__", general)
        yield seen


@pytest.mark.parametrize("case", CHOSEN)
def test_a_call_route_answers_records_and_charges_as_through_its_handler(tmp_path: Path, case: str) -> None:
    assert_same(*run_both(tmp_path, *CASES[case], general=through_handler))


def test_the_call_routes_are_call_endpoints_whose_handler_is_the_same_call(gateway: GatewayHarness) -> None:
    app = create_app(gateway.service)
    for path, shape in (("/v1/messages", ANTHROPIC), ("/v1/chat/completions", OPENAI), ("/v1/responses", RESPONSES)):
        endpoint = app.direct[("POST", path)]  # type: ignore[attr-defined]
        assert type(endpoint) is CallEndpoint and endpoint.shape is shape
        assert isinstance(endpoint.handler, functools.partial) and endpoint.handler.keywords == {"shape": shape}
        assert endpoint.handler.func.__self__ is endpoint.app and isinstance(endpoint.app, GatewayApp)


def test_a_call_request_holds_what_a_starlette_request_gives_the_call() -> None:
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/v1/messages", "headers": []}

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    light, request = CallRequest(scope, receive), Request(scope, receive)
    assert light.scope is request.scope and light.receive is request.receive


def test_a_refusal_is_the_same_bytes_through_both(gateway: GatewayHarness) -> None:
    app = create_app(gateway.service)
    body, _ = _posted("", {"model": HAIKU, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
    direct = asyncio.run(asgi(app.dispatch, "POST", "/v1/messages", body))  # type: ignore[attr-defined]
    endpoint = app.direct[("POST", "/v1/messages")]  # type: ignore[attr-defined]
    general = asyncio.run(asgi(functools.partial(Endpoint.__call__, endpoint), "POST", "/v1/messages", body))
    assert direct == general and direct[0] == 401
    assert orjson.loads(direct[2])["error"]["type"] == "authentication_error"
