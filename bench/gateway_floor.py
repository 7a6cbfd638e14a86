"""The pass-through floor of the gateway benchmark: the gateway's own server stack, forwarding bytes.

Starlette on uvicorn (uvloop, httptools), one route that posts the request body unchanged to the
upstream with one pooled httpx.AsyncClient and returns the answer's bytes (streams chunk by chunk).
No auth, no parsing, no record: the least any gateway on this stack can cost. `build_app` is the
uvicorn factory; the upstream comes from BENCH_UPSTREAM.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


def build_app() -> Starlette:
    upstream = os.environ["BENCH_UPSTREAM"].rstrip("/")
    client = httpx.AsyncClient(limits=httpx.Limits(max_connections=256, max_keepalive_connections=256))

    async def forward(request: Request) -> Response:
        body = await request.body()
        headers = {"content-type": "application/json", "x-api-key": "bench", "anthropic-version": "2023-06-01"}
        upstream_request = client.build_request("POST", upstream + request.url.path, content=body, headers=headers)
        answer = await client.send(upstream_request, stream=True)
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            async def chunks() -> AsyncIterator[bytes]:
                try:
                    async for chunk in answer.aiter_raw():
                        yield chunk
                finally:
                    await answer.aclose()

            return StreamingResponse(chunks(), status_code=answer.status_code, media_type="text/event-stream")
        content = await answer.aread()
        return Response(content, status_code=answer.status_code, media_type="application/json")

    return Starlette(routes=[Route("/v1/messages", forward, methods=["POST"])])
