"""JsonAnswer (app.py's fast path for JSON answers) sends what Starlette's Response sends."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from starlette.responses import Response

from metis_core.gateway.app import ANTHROPIC, OPENAI, JsonAnswer, error_response, json_response


def sent(response: Response, scope_type: str = "http") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    asyncio.run(response({"type": scope_type}, receive, send))  # type: ignore[arg-type]
    return messages


CASES = [
    ({"id": "msg_1", "content": [{"type": "text", "text": "héllo ✓"}]}, 200, None),
    ({"error": {"type": "rate_limit_error"}}, 429, {"retry-after": "3"}),
    ({"error": "x"}, 500, {"Retry-After": "1", "X-Other": "a"}),
    ([], 200, None),
    ({}, 204, None),
    ({"a": 1}, 200, {"content-type": "application/problem+json"}),
    ({"a": 1}, 200, {"content-length": "7"}),
]


@pytest.mark.parametrize(("payload", "status", "headers"), CASES)
def test_json_answer_sends_what_starlette_sends(payload: Any, status: int, headers: dict[str, str] | None) -> None:
    body = orjson.dumps(payload)
    general = Response(body, status_code=status, headers=headers, media_type="application/json")
    fast = JsonAnswer(body, status, headers)
    assert sent(fast) == sent(general)
    assert (fast.status_code, fast.body, fast.raw_headers, dict(fast.headers)) == (
        general.status_code, general.body, general.raw_headers, dict(general.headers))


def test_json_response_and_error_response_keep_their_bytes() -> None:
    answer = json_response({"status": "ok"})
    assert sent(answer) == [
        {"type": "http.response.start", "status": 200,
         "headers": [(b"content-length", b"15"), (b"content-type", b"application/json")]},
        {"type": "http.response.body", "body": b'{"status":"ok"}'},
    ]
    for shape in (OPENAI, ANTHROPIC):
        failure = error_response(shape, 429, "rate_limit", "slow down", retry_after=2.1)
        body = orjson.dumps(shape.error_body(429, "rate_limit", "slow down"))
        general = Response(body, status_code=429, headers={"retry-after": "3"}, media_type="application/json")
        assert sent(failure) == sent(general)


def test_json_answer_outside_http_takes_starlettes_path() -> None:
    body = b'{"a":1}'
    messages = sent(JsonAnswer(body), "websocket")
    assert messages == sent(Response(body, media_type="application/json"), "websocket")
    assert messages[0]["type"] == "websocket.http.response.start"
