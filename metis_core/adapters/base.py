"""The adapter contract (canonical-message-format §7.1): canonical ⇄ one provider API's wire format.

An adapter is pure translation: it builds request bodies, parses response bodies, turns stream
chunks into canonical StreamEvents and classifies errors. It does no I/O (transport/ does) and
never touches the store. Streaming is a synchronous state machine (`StreamTranslator`) so the same
code serves sync and async callers and can be fed recorded chunks directly in tests.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from metis_core.adapters._common.encoded_body import EncodedItems, encode_body
from metis_core.adapters._common.lossy import DroppedBlock
from metis_core.adapters._common.response_message import DIRECT_ROUTING_REASON, finish_usage, routing_record
from metis_core.adapters._common.token_estimate import estimate_tokens
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.errors import ProviderError
from metis_core.ids import new_ulid
from metis_core.messages import Message, RoutingDecisionRecord, RoutingMode, Usage, prechecked
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.models.model_id import parse_model_id
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.messages import StreamEvent, ToolDefinition
    from metis_core.models.pricing import PriceTable
    from metis_core.models.registry import ModelRegistry
    from metis_core.structured.plan import StructuredPlan
    from metis_core.structured.spec import OutputSpec
    from metis_core.transport.framing import WireChunk


@dataclass(slots=True)
class AdapterOptions:
    """Per-call settings. Adapters map what their API supports and ignore (and log) the rest."""

    model: str
    """Canonical model id, `<provider>:<name>`."""
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    thinking_budget_tokens: int | None = None
    tool_choice: str | dict[str, Any] | None = None
    """"auto" | "none" | "required" | {"name": tool_name}."""
    parallel_tool_calls: bool | None = None
    response_format: dict[str, Any] | None = None
    """Structured output: {"name": str, "schema": JSON Schema}."""
    stream: bool = False
    session_id: str = ""
    hosted_tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Provider-hosted tools to enable, canonical name -> settings merged into the wire definition
    (`{"web_search": {}, "file_search": {"vector_store_ids": ["vs_1"]}}`); routing refuses a target
    whose capabilities lack one (see docs/hosted-tools.md)."""
    provider_tools: list[dict[str, Any]] = field(default_factory=list)
    """Provider tool definitions sent as-is after the client tools (what a request reader found,
    e.g. `{"type": "web_search_20250305", "name": "web_search"}`)."""
    compact_at_tokens: int | None = None
    """Ask the provider to compact the conversation itself once its input reaches this many tokens
    (models whose capabilities name a `native_compaction`; others ignore it)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider-only knobs (e.g. OpenRouter `provider` routing); merged into the body as-is."""

    @property
    def model_name(self) -> str:
        return parse_model_id(self.model).name


@dataclass(slots=True)
class WireRequest:
    """A provider request, ready for the transport. Holds no secret: auth is added at send time."""

    path: str
    body: dict[str, Any]
    stream: bool = False
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    dropped: list[DroppedBlock] = field(default_factory=list)
    """Lossy projections made while building this request (each already logged at WARN)."""
    encoded: tuple[EncodedItems, ...] = ()
    """Lists in the body whose leading items' JSON was kept with them (a history sent before, the tools)."""

    def body_json(self) -> bytes:
        """The body as JSON: the bytes `orjson.dumps(body)` gives, the kept parts written as they are."""
        return encode_body(self.body, self.encoded)


DIRECT_ROUTING = prechecked.routing_record(RoutingMode.DEFAULT, "", DIRECT_ROUTING_REASON)


@dataclass(eq=False)
class RequestContext:
    """What parsing a response needs beyond the response: model, session, id map, pricing.

    One call's own state (its id map, start time, the id of the message it will give): a context equals
    only itself, so no field-by-field `__eq__` is generated."""

    model: str
    session_id: str = ""
    tool_ids: ToolIdMap = field(default_factory=ToolIdMap)
    routing: RoutingDecisionRecord | None = None
    prices: PriceTable | None = None
    tools: Sequence[ToolDefinition] = ()
    """The tools the request offered: tool calls in the answer are validated against them."""
    started_at: float = field(default_factory=time.perf_counter)
    message_id: str = field(default_factory=new_ulid)
    """Id given to the assistant message this call produces."""
    provider: str = field(init=False)
    model_name: str = field(init=False)

    def __post_init__(self) -> None:
        self.provider, self.model_name = parse_model_id(self.model)

    def latency_ms(self) -> int:
        return int((time.perf_counter() - self.started_at) * 1000)

    def routing_record(self) -> RoutingDecisionRecord:
        return routing_record(self)

    def finish_usage(self, usage: Usage) -> Usage:
        """Stamp latency and price a normalized usage (cost stays None for unpriced models)."""
        return finish_usage(self, usage)


class ChunkDecoder(Protocol):
    """Raw stream bytes -> WireChunks (transport/framing.py's SSE and NDJSON decoders, Bedrock's event stream)."""

    def feed(self, data: bytes) -> list[WireChunk]: ...

    def finish(self) -> list[WireChunk]: ...


class StreamTranslator(ABC):
    """Turns one provider stream into canonical events. Fed chunk by chunk; `finish()` at the end.

    `finish()` must end the stream cleanly whatever happened: if no terminal chunk arrived it
    yields an `error` event and a `message_complete` whose message is PARTIAL or ERROR.
    """

    @abstractmethod
    def feed(self, chunk: WireChunk) -> list[StreamEvent]: ...

    @abstractmethod
    def finish(self) -> list[StreamEvent]: ...


class Adapter(ABC):
    provider: ClassVar[str]
    """Provider key, e.g. "anthropic"; the part of a model id before the first colon."""
    api: ClassVar[str]
    """API surface, e.g. "messages", "chat_completions"; part of a signature's origin."""
    framing: ClassVar[Literal["sse", "ndjson", "eventstream"]] = "sse"
    default_base_url: ClassVar[str] = ""
    refreshes_auth: ClassVar[bool] = False
    """True when `auth_headers` hands out a short-lived cloud token (Entra ID, Google ADC) that the
    adapter refreshes itself: the client then asks for the headers on every call, never keeps them."""

    def __init__(self, registry: ModelRegistry | None = None) -> None:
        self._registry = registry

    # --- capabilities ----------------------------------------------------------------------

    @property
    def registry(self) -> ModelRegistry:
        if self._registry is None:
            from metis_core.models.registry import default_registry

            self._registry = default_registry()
        return self._registry

    def capabilities(self, model: str) -> AdapterCapabilities:
        return self.registry.capabilities(model)

    # --- the contract ----------------------------------------------------------------------

    @abstractmethod
    def to_wire(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: AdapterOptions,
        tool_ids: ToolIdMap | None = None,
    ) -> WireRequest:
        """Serialize canonical messages (already repaired) into this API's request."""

    @abstractmethod
    def from_wire_response(self, response: WireResponse, context: RequestContext) -> Message:
        """Parse a successful non-streaming response into a COMPLETE (or PARTIAL) Message."""

    @abstractmethod
    def stream_translator(self, context: RequestContext) -> StreamTranslator: ...

    @abstractmethod
    def classify_error(self, response: WireResponse) -> ProviderError:
        """Map a non-2xx response (status, headers, body) to the right ProviderError subclass."""

    @abstractmethod
    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        """Headers that carry the key. Only the transport calls this, at send time."""

    # --- provided ---------------------------------------------------------------------------

    def chunk_decoder(self) -> ChunkDecoder:
        """The framing decoder for one stream body: SSE or NDJSON by `framing`; an adapter with a binary
        framing (Bedrock's event stream) overrides this."""
        from metis_core.transport.framing import NDJSONDecoder, SSEDecoder  # streams only: a call never loads it

        return SSEDecoder() if self.framing == "sse" else NDJSONDecoder()

    def sign_request(self, method: str, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        """The headers to send, for APIs that sign each request over its URL and body (SigV4). Called at
        send time, after `auth_headers`; the default sends the headers as they are."""
        return headers
    def request_url(self, base_url: str, request: WireRequest) -> str:
        """The URL a request goes to: the base URL, the request's path and its query. Cloud adapters
        whose URL carries a deployment, project or region override this."""
        if not request.query:
            return base_url + request.path
        from urllib.parse import urlencode

        return f"{base_url}{request.path}?{urlencode(request.query)}"

    def stream_response(
        self, chunks: AsyncIterator[WireChunk], context: RequestContext
    ) -> AsyncIterator[StreamEvent]:
        """An async generator (adapters/stream_response.py)."""
        from metis_core.adapters.stream_response import translated_stream

        return translated_stream(self.stream_translator(context), chunks)

    def stream_response_sync(
        self, chunks: Iterable[WireChunk], context: RequestContext
    ) -> Iterator[StreamEvent]:
        translator = self.stream_translator(context)
        for chunk in chunks:
            yield from translator.feed(chunk)
        yield from translator.finish()

    def structured_plan(self, spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
        """How this API carries `spec` for `model` (docs/structured-output.md); adapters with a native
        form override this in their `structured.py`. CapabilityMismatchError if it cannot be carried."""
        from metis_core.structured.plan import default_plan

        return default_plan(spec, capabilities, model)

    def estimate_input_tokens(self, messages: list[Message], tools: list[ToolDefinition]) -> int:
        """Pre-flight estimate for routing and the context check (~4 characters a token).

        Deliberately provider-agnostic and cheap; an adapter with a better rule may override it.
        """
        return estimate_tokens(messages, tools)
