"""The gateway's own routes skip Starlette's middleware and router (GatewayStarlette's fast path).

What a request to one of them leaves (the response, every event, the store, the charge) must be what
it left through Starlette's whole stack (`starlette_stack` puts every request through it again); a
request the route table does not hold exactly still gets Starlette's answer; and an error that
escapes a handler is the inbound shape's own 500 body on both paths, never a plain-text one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette

from metis_core.gateway.app import ANTHROPIC, OPENAI, RESPONSES, GatewayStarlette, create_app
from metis_core.gateway.service import GatewayService

from .gateway_harness import GatewayHarness
from .test_gateway_direct_answer import CASES, assert_same, run_both

HAIKU = "anthropic:claude-haiku-4-5"
FAILED = "the gateway failed to answer; the operator's log has the details"


@contextlib.contextmanager
def starlette_stack() -> Iterator[list[str]]:
    """Every request through Starlette's middleware and router, as before the fast path; yields the
    paths that went through that stack."""
    seen: list[str] = []

    async def through_starlette(self: GatewayStarlette, scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope.get("path", scope["type"]))
        await Starlette.__call__(self, scope, receive, send)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(GatewayStarlette, "dispatch", through_starlette)  # behind the app's WebGuard, as before
        yield seen


CHOSEN = ["anthropic text", "openai client, thinking anthropic model", "responses client, openai model",
          "an upstream error is the shape's error", "a fallback chain answers from its next member"]


@pytest.mark.parametrize("case", CHOSEN)
def test_a_route_of_the_table_answers_records_and_charges_as_through_starlettes_stack(
        tmp_path: Path, case: str) -> None:
    assert_same(*run_both(tmp_path, *CASES[case], general=starlette_stack))


# --- driving the ASGI app in-process ------------------------------------------------------------


async def asgi(app: Any, method: str, path: str, body: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None,
               root_path: str = "") -> tuple[int, dict[bytes, bytes], bytes]:
    """One request as a server hands it over; the client stays until the answer ends."""
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": root_path + path, "raw_path": (root_path + path).encode(),
             "query_string": b"", "root_path": root_path, "client": ("127.0.0.1", 5000),
             "server": ("gateway", 80), "headers": [(b"host", b"gateway"), *(headers or [])], "state": {}}
    done = asyncio.Event()
    sent = False
    answer: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"], answer["headers"] = message["status"], dict(message.get("headers", []))
        else:
            answer["body"] += message.get("body", b"")
            if not message.get("more_body", False):
                done.set()

    await app(scope, receive, send)
    return answer["status"], answer["headers"], answer["body"]


def _posted(token: str, payload: dict[str, Any]) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    body = orjson.dumps(payload)
    return body, [(b"content-type", b"application/json"), (b"x-api-key", token.encode()),
                  (b"content-length", str(len(body)).encode())]


@pytest.mark.parametrize(("path", "shape"), [("/v1/messages", ANTHROPIC), ("/v1/chat/completions", OPENAI),
                                             ("/v1/responses", RESPONSES)])
@pytest.mark.parametrize("root_path", ["", "/behind-a-proxy"])
def test_an_error_escaping_a_handler_is_the_inbound_shapes_500(
        gateway: GatewayHarness, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        path: str, shape: Any, root_path: str) -> None:
    """`root_path` set: the fast path steps aside and Starlette's router reaches the same Endpoint."""
    _, token = gateway.issue()

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug with sk-ant-upstream-SECRET-0001 in its message")

    monkeypatch.setattr(GatewayService, "read", broken)
    app = create_app(gateway.service)
    body, headers = _posted(token, {"model": HAIKU, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
    with starlette_stack() if root_path else contextlib.nullcontext() as seen:
        status, answer_headers, answer = asyncio.run(asgi(app, "POST", path, body, headers, root_path))
    assert status == 500
    assert answer_headers[b"content-type"] == b"application/json"
    assert orjson.loads(answer) == shape.error_body(500, "upstream", FAILED)
    assert b"SECRET" not in answer
    assert "gateway request POST" in caplog.text  # the operator's log has the error
    if root_path:
        assert seen == [root_path + path]


def test_what_the_table_does_not_hold_exactly_gets_starlettes_answer(gateway: GatewayHarness) -> None:
    app = create_app(gateway.service)

    async def calls() -> list[tuple[int, dict[bytes, bytes], bytes]]:
        return [await asgi(app, "GET", "/v1/messages"), await asgi(app, "GET", "/nowhere"),
                await asgi(app, "HEAD", "/healthz"), await asgi(app, "POST", "/v1/messages/"),
                await asgi(app, "GET", "/healthz")]

    wrong_method, unknown, head, slash, health = asyncio.run(calls())
    assert (wrong_method[0], wrong_method[1][b"allow"]) == (405, b"POST")
    assert (unknown[0], unknown[2]) == (404, b"Not Found")
    assert head[0] == 200  # the server drops a HEAD answer's body
    assert (slash[0], slash[1][b"location"]) == (307, b"http://gateway/v1/messages")
    assert (health[0], orjson.loads(health[2])) == (200, {"status": "ok"})


def test_the_fast_path_and_starlette_answer_the_same_refusal(gateway: GatewayHarness) -> None:
    """A request refused before any upstream call (no key) is the same bytes through both."""
    app = create_app(gateway.service)
    body, _ = _posted("", {"model": HAIKU, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
    direct = asyncio.run(asgi(app, "POST", "/v1/messages", body))
    with starlette_stack() as seen:
        general = asyncio.run(asgi(app, "POST", "/v1/messages", body))
    assert seen == ["/v1/messages"]
    assert direct == general and direct[0] == 401


def test_the_mounted_web_routes_still_answer_behind_the_fast_path(gateway: GatewayHarness) -> None:
    """Routes appended after create_app (as `metis gateway serve --web` mounts its app) go through Starlette."""
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    app = create_app(gateway.service)

    async def hello(request: Any) -> PlainTextResponse:
        return PlainTextResponse("web")

    app.router.routes.append(Route("/web", hello))
    status, _, answer = asyncio.run(asgi(app, "GET", "/web"))
    assert (status, answer) == (200, b"web")
    assert httpx.get(gateway.base_url + "/healthz").json() == {"status": "ok"}


def test_a_middleware_added_to_the_app_is_never_skipped(gateway: GatewayHarness) -> None:
    app = create_app(gateway.service)
    seen: list[str] = []

    class Tagging:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            seen.append(scope.get("path", scope["type"]))
            await self.inner(scope, receive, send)

    app.add_middleware(Tagging)
    status, _, _ = asyncio.run(asgi(app, "GET", "/healthz"))
    assert (status, seen) == (200, ["/healthz"])
