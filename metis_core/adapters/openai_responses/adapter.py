"""`OpenAIResponsesAdapter`: the Adapter contract for OpenAI's Responses API, wired from this folder.

The class only connects the pieces: request.py builds bodies, response.py and stream.py parse,
errors.py classifies, request_reader.py reads wire requests back. Stateless requests (store:false
safe); Bearer auth added by the transport at send time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import Adapter, AdapterOptions, RequestContext, StreamTranslator, WireRequest
from metis_core.adapters.openai_responses.errors import classify_error
from metis_core.adapters.openai_responses.raw import API, PROVIDER
from metis_core.adapters.openai_responses.request import build_request
from metis_core.adapters.openai_responses.response import message_from_response
from metis_core.adapters.openai_responses.stream import ResponsesStreamTranslator
from metis_core.errors import ProviderError
from metis_core.messages import Message, ToolDefinition
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.structured.plan import StructuredPlan
    from metis_core.structured.spec import OutputSpec

UNLISTED_MODEL_CAPABILITIES = AdapterCapabilities(supports_images=True)
"""For a model the registry does not list: send images (the API says if it cannot take them) and
ask for encrypted reasoning only when reasoning is requested (non-reasoning models reject it)."""


class OpenAIResponsesAdapter(Adapter):
    provider: ClassVar[str] = PROVIDER
    api: ClassVar[str] = API
    framing: ClassVar[Literal["sse", "ndjson"]] = "sse"
    default_base_url: ClassVar[str] = "https://api.openai.com/v1"

    def to_wire(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: AdapterOptions,
        tool_ids: ToolIdMap | None = None,
    ) -> WireRequest:
        ids = tool_ids if tool_ids is not None else ToolIdMap()
        return build_request(messages, tools, options, ids, self._capabilities_for(options.model))

    def _capabilities_for(self, model: str) -> AdapterCapabilities:
        registry = self.registry
        return registry.capabilities(model) if registry.knows(model) else UNLISTED_MODEL_CAPABILITIES

    def from_wire_response(self, response: WireResponse, context: RequestContext) -> Message:
        return message_from_response(response, context)

    def stream_translator(self, context: RequestContext) -> StreamTranslator:
        return ResponsesStreamTranslator(context)

    def structured_plan(self, spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
        from metis_core.adapters.openai_chat.structured import openai_structured_plan  # structured calls only

        return openai_structured_plan(spec, capabilities, model)

    def classify_error(self, response: WireResponse) -> ProviderError:
        return classify_error(response)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}
