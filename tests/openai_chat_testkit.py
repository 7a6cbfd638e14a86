"""Shared test kit for the OpenAI chat family (openai, openrouter, openai_compatible).

Import as `from openai_chat_testkit import ...`. Recorded bytes are served through the real path:
ModelClient -> httpx.MockTransport -> SSE framing -> adapter. The official `openai` SDK is used
here only as an oracle for request shapes, never by metis_core.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
from mock_http import ChunkedBody, MockServer, serve, split
from openai.types.chat import completion_create_params
from pydantic import TypeAdapter

from metis_core.adapters.client import ModelClient
from metis_core.messages import Message, MessageComplete, StreamEvent
from metis_core.models.capabilities import AdapterCapabilities

SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}

_NON_STREAMING: TypeAdapter[Any] = TypeAdapter(completion_create_params.CompletionCreateParamsNonStreaming)
_STREAMING: TypeAdapter[Any] = TypeAdapter(completion_create_params.CompletionCreateParamsStreaming)


class FixedCapabilities:
    """A stand-in registry: every model gets the same capabilities (what a test declares)."""

    def __init__(self, capabilities: AdapterCapabilities) -> None:
        self.caps = capabilities

    def capabilities(self, model: str) -> AdapterCapabilities:
        return self.caps


def capabilities_of_sample(body: dict[str, Any], **overrides: Any) -> AdapterCapabilities:
    """The capabilities in force when a request was recorded, read off the request itself."""
    fields: dict[str, Any] = {
        "supports_images": True,
        "max_tokens_field": "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens",
        "supports_developer_role": any(m.get("role") == "developer" for m in body.get("messages", [])),
        "supports_stream_usage": "stream_options" in body or not body.get("stream"),
    }
    fields.update(overrides)
    return AdapterCapabilities(**fields)


def _materialize(value: Any) -> Any:
    """Pydantic validates the SDK's Iterable fields lazily: walk everything so errors surface."""
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_materialize(v) for v in value]
    if isinstance(value, Iterator) or type(value).__name__ == "ValidatorIterator":
        return [_materialize(v) for v in value]
    return value


def validate_with_sdk(body: dict[str, Any]) -> dict[str, Any]:
    """Validate a built body against the official SDK's request TypedDicts (raises on mismatch)."""
    adapter = _STREAMING if body.get("stream") else _NON_STREAMING
    validated: dict[str, Any] = _materialize(adapter.validate_python(body))
    return validated


def sse_response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> httpx.Response:
    """A streamed HTTP response whose body arrives in small pieces cut at arbitrary bytes."""
    return httpx.Response(status, headers={**SSE, **(headers or {})}, stream=ChunkedBody(split(body, 41)))


def json_response(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers={**JSON, **(headers or {})}, content=body)


def chat_client(
    provider: str, *responses: httpx.Response, capabilities: AdapterCapabilities | None = None, **kwargs: Any
) -> tuple[ModelClient, MockServer]:
    """A ModelClient for one provider, every adapter seeing `capabilities` (defaults otherwise)."""
    registry = FixedCapabilities(capabilities or AdapterCapabilities(supports_images=True))
    return serve(*responses, provider=provider, api_key="sk-test-SECRET-42", registry=registry, **kwargs)


def final_message(events: list[StreamEvent]) -> Message:
    last = events[-1]
    assert isinstance(last, MessageComplete), f"stream did not end with message_complete: {last!r}"
    message: Message = last.message
    return message
