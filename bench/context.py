"""What every case gets: the local server's URL, the run's size, and the implementations to compare.

Peers are found by importing their modules; one whose library is not installed (outside
bench/.venv) is left out and named in `missing`, so the same cases run in the smoke test with
metis-core and the floor alone. Sizes shrink in quick mode; nothing else changes.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bench.figures import AIOHTTP_FLOOR, FLOOR, MAPPING_REFERENCE, METIS

PEER_MODULES: dict[str, tuple[str, str]] = {
    FLOOR: ("bench.peers.floor", "FloorCaller"),
    AIOHTTP_FLOOR: ("bench.peers.aiohttp_floor", "AiohttpFloorCaller"),
    MAPPING_REFERENCE: ("bench.peers.floor_mapping", "MappingFloorCaller"),
    METIS: ("bench.peers.metis", "MetisCaller"),
    "openai SDK": ("bench.peers.openai_sdk", "OpenAISDKCaller"),
    "anthropic SDK": ("bench.peers.anthropic_sdk", "AnthropicSDKCaller"),
    "litellm": ("bench.peers.litellm_peer", "LiteLLMCaller"),
    "pydantic-ai": ("bench.peers.pydantic_ai_peer", "PydanticAICaller"),
}
"""Implementation key -> (module, caller class). Order is the table's order."""


@dataclass(frozen=True, slots=True)
class Sizes:
    calls: int
    warmup: int
    block: int
    streams: int
    cold_runs: int
    translate_number: int
    repeats: int
    store_events: int
    session_messages: int

    @classmethod
    def for_mode(cls, quick: bool) -> Sizes:
        if quick:
            return cls(calls=30, warmup=3, block=10, streams=2, cold_runs=3, translate_number=200, repeats=3,
                       store_events=2_000, session_messages=2_000)
        return cls(calls=200, warmup=15, block=20, streams=10, cold_runs=11, translate_number=2_000, repeats=7,
                   store_events=50_000, session_messages=10_000)


@dataclass
class RunContext:
    server: str
    quick: bool = False
    only_impls: tuple[str, ...] | None = None
    modules: dict[str, ModuleType] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    python: str = sys.executable

    @property
    def sizes(self) -> Sizes:
        return Sizes.for_mode(self.quick)

    def load_peers(self) -> None:
        for key, (module_name, _) in PEER_MODULES.items():
            if self.only_impls is not None and key not in self.only_impls and key not in (FLOOR, AIOHTTP_FLOOR, METIS):
                continue
            try:
                self.modules[key] = importlib.import_module(module_name)
            except ImportError as exc:
                self.missing[key] = f"not installed here ({exc.name or exc})"

    def display_name(self, key: str) -> str:
        module = self.modules[key]
        return str(getattr(module, "NAME", key))

    def callers_for(self, provider: str, *, streaming: bool = False, asynchronous: bool = False) -> list[str]:
        """Implementation keys that can make this provider's call (or stream); an async call also
        counts the async-only callers (ASYNC_PROVIDERS: the aiohttp floor)."""
        attribute = "STREAM_PROVIDERS" if streaming else "PROVIDERS"
        return [key for key, module in self.modules.items()
                if provider in getattr(module, attribute, ())
                or (asynchronous and provider in getattr(module, "ASYNC_PROVIDERS", ()))]

    def new_caller(self, key: str) -> Any:
        _, class_name = PEER_MODULES[key]
        return getattr(self.modules[key], class_name)(self.server)
