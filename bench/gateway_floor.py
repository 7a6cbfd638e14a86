"""The pass-through floor of the gateway benchmark: the gateway's own server stack, forwarding bytes.

Starlette on uvicorn (uvloop, httptools), one route that posts the request body unchanged to the
upstream with one pooled aiohttp session (the client metis's gateway uses; httpx's pool cost
~5 ms of CPU per request at 64 concurrent clients, so a floor on it was no floor) and returns the
answer's bytes (streams chunk by chunk). No auth, no parsing, no record: the least any gateway
on this stack can cost. `build_app` is the uvicorn factory; the upstream comes from BENCH_UPSTREAM.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import aiohttp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

HEADERS = {"content-type": "application/json", "x-api-key": "bench", "anthropic-version": "2023-06-01"}


def build_app() -> Starlette:
    upstream = os.environ["BENCH_UPSTREAM"].rstrip("/")
    sessions: list[aiohttp.ClientSession] = []  # made on the server's loop, at the first request

    async def forward(request: Request) -> Response:
        if not sessions:
            sessions.append(aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256)))
        body = await request.body()
        answer = await sessions[0].post(upstream + request.url.path, data=body, headers=HEADERS)
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            async def chunks() -> AsyncIterator[bytes]:
                try:
                    async for chunk in answer.content.iter_any():
                        yield chunk
                finally:
                    answer.release()

            return StreamingResponse(chunks(), status_code=answer.status, media_type="text/event-stream")
        content = await answer.read()
        answer.release()
        return Response(content, status_code=answer.status, media_type="application/json")

    return Starlette(routes=[Route("/v1/messages", forward, methods=["POST"])])
