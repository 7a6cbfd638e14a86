"""The async floor: raw aiohttp posting the floor's prebuilt body and reading the answer with orjson.

metis-core's own async calls ride aiohttp (transport/owned_async.py), so this, not httpx's
AsyncClient, is what an async call costs with nothing but the HTTP client and a JSON parser; the
async call rows are judged against it. Async non-streaming calls only.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from bench.figures import AIOHTTP_FLOOR
from bench.peers.floor import PATHS, Fields, fields_from_json, headers_for, prebuilt_body
from bench.peers.metis import base_urls

NAME = AIOHTTP_FLOOR
ASYNC_PROVIDERS = ("anthropic", "openai")


class AiohttpFloorCaller:
    """One aiohttp session, made on the loop that times it (on first use)."""

    fields = staticmethod(lambda result: result)

    def __init__(self, server: str) -> None:
        self.urls = {p: base_urls(server)[p] + PATHS[p] for p in ASYNC_PROVIDERS}
        self.bodies = {p: prebuilt_body(p, stream=False) for p in ASYNC_PROVIDERS}
        self.headers = {p: headers_for(p) for p in ASYNC_PROVIDERS}
        self.session: aiohttp.ClientSession | None = None

    async def acomplete(self, provider: str) -> Fields:
        if self.session is None:
            self.session = aiohttp.ClientSession()
        async with self.session.post(self.urls[provider], data=self.bodies[provider],
                                     headers=self.headers[provider]) as response:
            response.raise_for_status()
            data: Any = orjson.loads(await response.read())
        return fields_from_json(provider, data)

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()
