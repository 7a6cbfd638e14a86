"""GeminiAdapter: the Gemini API's `generateContent` / `streamGenerateContent?alt=sse`.

A thin class wiring the concerns of this folder together: request.py builds bodies, response.py
and stream.py parse answers, errors.py classifies failures. The key travels in the
`x-goog-api-key` header, never as the `?key=` query parameter, so it cannot leak into logged URLs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import Adapter, AdapterOptions, RequestContext, StreamTranslator, WireRequest
from metis_core.adapters.gemini.errors import classify_gemini_error
from metis_core.adapters.gemini.request import build_request
from metis_core.adapters.gemini.response import parse_response
from metis_core.adapters.gemini.stream import GeminiStreamTranslator
from metis_core.errors import ModelIdError, ProviderError, UnknownModelError
from metis_core.messages import Message, ToolDefinition
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.structured.plan import StructuredPlan
    from metis_core.structured.spec import OutputSpec

UNLISTED_GEMINI = AdapterCapabilities(supports_thinking=True, supports_images=True, supports_structured_output=True)
"""Assumed for a Gemini model the registry does not list: every Gemini model reads images."""


class GeminiAdapter(Adapter):
    provider: ClassVar[str] = "gemini"
    api: ClassVar[str] = "generate_content"
    framing: ClassVar[Literal["sse", "ndjson"]] = "sse"
    default_base_url: ClassVar[str] = "https://generativelanguage.googleapis.com"

    def _capabilities_or_default(self, model: str) -> AdapterCapabilities:
        try:
            return self.capabilities(model)
        except (UnknownModelError, ModelIdError):
            return UNLISTED_GEMINI

    def to_wire(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: AdapterOptions,
        tool_ids: ToolIdMap | None = None,
    ) -> WireRequest:
        return build_request(messages, tools, options, tool_ids,
                             lambda: self._capabilities_or_default(options.model))

    def from_wire_response(self, response: WireResponse, context: RequestContext) -> Message:
        return parse_response(response, context)

    def stream_translator(self, context: RequestContext) -> StreamTranslator:
        return GeminiStreamTranslator(context)

    def structured_plan(self, spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
        from metis_core.adapters.gemini.structured import gemini_structured_plan  # structured calls only

        return gemini_structured_plan(spec, capabilities, model)

    def classify_error(self, response: WireResponse) -> ProviderError:
        return classify_gemini_error(response)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"x-goog-api-key": api_key} if api_key else {}
