"""What every inbound wire shape gives the gateway: read a body, write an answer, a stream, an error.

A shape reads with the adapters' own request readers (a wire format is known in one folder) and
writes canonical messages and stream events back in its own format. Writers are incremental:
each canonical stream event becomes zero or more SSE frames at once, nothing is held back
except what the wire format itself requires at the end (Anthropic thinking signatures).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import orjson

from metis_core.adapters._common.tool_ids import IdStyle, ToolIdMap
from metis_core.adapters.base import AdapterOptions
from metis_core.messages import Message, StreamEvent, TextDelta, ToolDefinition

ShapeName = Literal["openai", "anthropic"]
OUTPUT_REFUSAL = "output_refusal"
"""Metadata flag on an answer that is a structured-output refusal (OpenAI shapes write it as `refusal`)."""


CONTINUATION_LIMIT = "continuation_limit"
"""Metadata flag on an answer still paused when the gateway stopped continuing it (continued_call.py):
OpenAI shapes write it as cut short (`length`, `incomplete`), the Anthropic shape as `pause_turn`."""


def is_output_refusal(message: Message) -> bool:
    # Both flags are extra metadata fields: read from the extras directly (a `getattr` default costs
    # pydantic's __getattr__ and a raised AttributeError on every answer without the flag).
    return bool((message.metadata.model_extra or {}).get(OUTPUT_REFUSAL, False))


def hit_continuation_limit(message: Message) -> bool:
    extra = message.metadata.__pydantic_extra__  # what `model_extra` returns, without its property's frame
    return bool(extra.get(CONTINUATION_LIMIT, False)) if extra else False


def cut_short(message: Message) -> bool:
    """The answer ended before the model finished: its output limit, or the gateway's continuation limit."""
    return message.metadata.stop_reason == "max_tokens" or hit_continuation_limit(message)


@dataclass(slots=True)
class InboundRequest:
    """An inbound body in canonical form."""

    messages: list[Message]
    tools: list[ToolDefinition]
    options: AdapterOptions
    tool_ids: ToolIdMap
    stream: bool
    include_usage: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def sse(event: str | None, payload: Any) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(payload) + b"\n\n"


class StreamWriter(ABC):
    """Canonical stream events -> SSE bytes of one shape, for one answer."""

    upstream_provider: str = ""
    """Who is answering (set per attempt); decides whether thinking may be shown signed."""
    upstream_model: str = ""
    """The answering model as `<provider>:<name>` (set with upstream_provider)."""

    @abstractmethod
    def feed(self, event: StreamEvent) -> bytes: ...

    def refusal(self, text: str) -> bytes:
        """A structured-output refusal's text; shapes without a refusal field write it as text."""
        return self.feed(TextDelta(index=0, text=text))

    @abstractmethod
    def fail(self, status: int, kind: str, message: str) -> bytes:
        """The frames that end a stream which failed after it started."""


class InboundShape(ABC):
    name: ClassVar[ShapeName]
    """The `inbound_shape` value on events."""
    namespace: ClassVar[str]
    """The ToolIdMap namespace of ids this shape's clients send and receive."""
    id_style: ClassVar[IdStyle]
    natural_provider: ClassVar[str]
    """Where a bare model name (no `provider:`) is looked up first."""
    extra_providers: ClassVar[frozenset[str]]
    """Providers whose requests take this shape's unmapped fields (`AdapterOptions.extra`) verbatim;
    for any other upstream they are dropped, since its API would reject them."""
    forced_tool_is_schema: ClassVar[bool] = False
    """Whether one tool forced by `tool_choice` is a structured-output ask (Anthropic's documented way)."""

    def body_problem(self, body: dict[str, Any]) -> str | None:
        """What is wrong with the body's shape before reading it (None: nothing found)."""
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return "`messages` must be a non-empty list of message objects"
        return None

    @abstractmethod
    def read(self, body: dict[str, Any], model_name: str, session_id: str) -> InboundRequest:
        """Canonical form of the body; `model_name` is the resolved name when this shape's provider
        serves the call (so thinking signatures keep their origin), else the name asked for."""

    @abstractmethod
    def response_body(self, message: Message, model: str, tool_ids: ToolIdMap) -> dict[str, Any]: ...

    @abstractmethod
    def stream_writer(self, model: str, tool_ids: ToolIdMap, request: InboundRequest) -> StreamWriter: ...

    @abstractmethod
    def error_body(self, status: int, kind: str, message: str) -> dict[str, Any]: ...

    def client_tool_id(self, tool_ids: ToolIdMap, canonical_id: str) -> str:
        """The id the client sees: the one the same provider issued, else one minted for this shape."""
        return tool_ids.provider_for(self.namespace, canonical_id, self.id_style)
