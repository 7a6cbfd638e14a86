"""OllamaAdapter: the Ollama native chat API (`POST /api/chat`, NDJSON) behind the adapter contract.

Small on purpose: the class wires the concern modules together (request, response, stream, errors).
Local Ollama needs no key; a key, when configured (hosted Ollama), is sent as a Bearer token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import Adapter, AdapterOptions, RequestContext, StreamTranslator, WireRequest
from metis_core.adapters.ollama.errors import classify_ollama_error
from metis_core.adapters.ollama.request import API, PROVIDER, build_chat_request
from metis_core.adapters.ollama.response import parse_chat_response
from metis_core.adapters.ollama.stream import OllamaStreamTranslator
from metis_core.errors import ProviderError
from metis_core.messages import Message, ToolDefinition
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.structured.plan import StructuredPlan
    from metis_core.structured.spec import OutputSpec

DEFAULT_BASE_URL = "http://127.0.0.1:11434"


class OllamaAdapter(Adapter):
    provider: ClassVar[str] = PROVIDER
    api: ClassVar[str] = API
    framing: ClassVar[Literal["sse", "ndjson"]] = "ndjson"
    default_base_url: ClassVar[str] = DEFAULT_BASE_URL

    def to_wire(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: AdapterOptions,
        tool_ids: ToolIdMap | None = None,
    ) -> WireRequest:
        """`tool_ids` is unused: Ollama's wire has no tool-call ids, so nothing needs mapping out."""
        return build_chat_request(messages, tools, options, lambda: self.capabilities(options.model))

    def from_wire_response(self, response: WireResponse, context: RequestContext) -> Message:
        return parse_chat_response(response, context)

    def stream_translator(self, context: RequestContext) -> StreamTranslator:
        return OllamaStreamTranslator(context)

    def structured_plan(self, spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
        from metis_core.adapters.ollama.structured import ollama_structured_plan  # structured calls only

        return ollama_structured_plan(spec, capabilities, model)

    def classify_error(self, response: WireResponse) -> ProviderError:
        return classify_ollama_error(response)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}
