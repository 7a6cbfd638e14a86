"""Reference line for the call rows: the floor, plus translating the conversation on every call.

Any library that keeps a canonical conversation must turn it into the provider's wire format on
each turn; this caller does the least of that work, the hand-written mapping (bench/handwritten.py)
and one `orjson.dumps`, then posts and reads the answer exactly as the row's floor does (raw httpx
for sync calls, raw aiohttp for async ones, bench/peers/aiohttp_floor.py). Its distance
from the floor shows what per-call translation costs on the machine as it is during the run (CPU
work after each network wait grows when the machine is busy, the floor's far less); metis-core's
distance from this line is its own checks and bookkeeping. Not a peer: it validates nothing.
"""

from __future__ import annotations

import aiohttp
import orjson

from bench import handwritten
from bench.figures import MAPPING_REFERENCE
from bench.peers.floor import PATHS, Fields, FloorCaller, fields_from_json
from bench.peers.metis import canonical_conversation

NAME = MAPPING_REFERENCE
PROVIDERS = ("anthropic", "openai")


class MappingFloorCaller(FloorCaller):
    """The floor's client and answer reading; the body is built from the canonical messages each call."""

    def __init__(self, server: str) -> None:
        super().__init__(server)
        self.messages = canonical_conversation()
        self.session: aiohttp.ClientSession | None = None
        """The async floor's client, made on the loop that times it (on first use)."""

    def _body(self, provider: str) -> bytes:
        return orjson.dumps(handwritten.MAPPINGS[provider](self.messages))

    def complete(self, provider: str) -> Fields:
        response = self.client.post(self.urls[provider] + PATHS[provider], content=self._body(provider),
                                    headers=self.headers[provider])
        response.raise_for_status()
        return fields_from_json(provider, orjson.loads(response.content))

    async def acomplete(self, provider: str) -> Fields:
        if self.session is None:
            self.session = aiohttp.ClientSession()
        async with self.session.post(self.urls[provider] + PATHS[provider], data=self._body(provider),
                                     headers=self.headers[provider]) as response:
            response.raise_for_status()
            data = orjson.loads(await response.read())
        return fields_from_json(provider, data)

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()
        await super().aclose()
