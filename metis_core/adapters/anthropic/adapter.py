"""AnthropicAdapter: the Messages API behind the adapter contract; each concern lives in its own module."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.request import API, API_VERSION, PROVIDER, build_request
from metis_core.adapters.anthropic.response import parse_response
from metis_core.adapters.base import Adapter, AdapterOptions, RequestContext, StreamTranslator, WireRequest
from metis_core.errors import ProviderError
from metis_core.messages import Message
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.messages import ToolDefinition
    from metis_core.structured.plan import StructuredPlan
    from metis_core.structured.spec import OutputSpec


class AnthropicAdapter(Adapter):
    provider: ClassVar[str] = PROVIDER
    api: ClassVar[str] = API
    framing: ClassVar[Literal["sse", "ndjson"]] = "sse"
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    api_version: ClassVar[str] = API_VERSION

    def to_wire(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: AdapterOptions,
        tool_ids: ToolIdMap | None = None,
    ) -> WireRequest:
        return build_request(self, messages, tools, options, tool_ids)

    def from_wire_response(self, response: WireResponse, context: RequestContext) -> Message:
        return parse_response(response, context)

    def stream_translator(self, context: RequestContext) -> StreamTranslator:
        from metis_core.adapters.anthropic.stream import AnthropicStreamTranslator  # streams only

        return AnthropicStreamTranslator(context)

    def structured_plan(self, spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
        from metis_core.adapters.anthropic.structured import anthropic_structured_plan  # structured calls only

        return anthropic_structured_plan(spec, capabilities, model)

    def classify_error(self, response: WireResponse) -> ProviderError:
        from metis_core.adapters.anthropic.errors import classify_error  # error answers only

        return classify_error(response)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"x-api-key": api_key} if api_key else {}

