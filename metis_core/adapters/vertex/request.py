"""Canonical -> Vertex request bodies: Gemini's and Anthropic's builders, with Vertex's deviations.

Gemini: the same body, the path `/publishers/google/models/<m>:generateContent` (or stream). Claude:
the Messages body without `model`, with `anthropic_version: vertex-2023-10-16`, `:rawPredict` or
`:streamRawPredict`. Claude signatures from Anthropic direct, Bedrock or this provider replay to the
same model (Anthropic documents them as valid across platforms); the rest is dropped and logged.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from metis_core.adapters._common.platform_origin import claude_signature_travels, restamp_origins
from metis_core.adapters.anthropic.request import API as ANTHROPIC_API
from metis_core.adapters.anthropic.request import PROVIDER as ANTHROPIC
from metis_core.adapters.base import WireRequest
from metis_core.adapters.gemini.signatures import API as GEMINI_API
from metis_core.adapters.gemini.signatures import PROVIDER as GEMINI
from metis_core.messages import BlockOrigin, Message

ANTHROPIC_VERTEX_VERSION = "vertex-2023-10-16"


def publisher_path(publisher: str, model: str, method: str) -> str:
    return f"/publishers/{publisher}/models/{quote(model, safe='-._@')}:{method}"


def gemini_history(messages: list[Message], provider: str) -> list[Message]:
    def own(origin: BlockOrigin) -> BlockOrigin | None:
        if origin.provider == provider and origin.api == GEMINI_API:
            return BlockOrigin(provider=GEMINI, api=GEMINI_API, model=origin.model)
        if origin.provider == GEMINI:  # the Gemini API's own: kept apart from this provider's
            return BlockOrigin(provider="gemini_api", api=origin.api, model=origin.model)
        return None

    return restamp_origins(messages, own)


def claude_history(messages: list[Message], provider: str, model: str) -> list[Message]:
    def signed_for_this_model(origin: BlockOrigin) -> BlockOrigin | None:
        own = origin.provider == provider and origin.api == ANTHROPIC_API and origin.model == model
        if own or claude_signature_travels(origin, model):
            return BlockOrigin(provider=ANTHROPIC, api=ANTHROPIC_API, model=model)
        return None  # another model's or platform's signature: the builder drops it and logs why

    return restamp_origins(messages, signed_for_this_model)


def gemini_on_vertex(request: WireRequest, model: str) -> WireRequest:
    method = "streamGenerateContent" if request.stream else "generateContent"
    request.path = publisher_path("google", model, method)
    return request


def claude_on_vertex(request: WireRequest, model: str) -> WireRequest:
    body: dict[str, Any] = {"anthropic_version": ANTHROPIC_VERTEX_VERSION}
    body.update((key, value) for key, value in request.body.items() if key != "model")
    request.body = body
    request.headers.pop("anthropic-version", None)
    request.path = publisher_path("anthropic", model, "streamRawPredict" if request.stream else "rawPredict")
    return request
