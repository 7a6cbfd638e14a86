"""`VertexGeminiAdapter` (`vertex:<gemini model>`) and `VertexAnthropicAdapter` (`vertex_anthropic:<claude@date>`).

The Gemini and Anthropic adapters with Vertex's URL (endpoint.py), Google credentials (auth.py,
refreshed by the adapter, so `refreshes_auth` is set), error names (errors.py) and request
deviations (request.py). Parsing and streaming are the publishers' own (response.py, stream.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.anthropic.adapter import AnthropicAdapter
from metis_core.adapters.base import Adapter, AdapterOptions, WireRequest
from metis_core.adapters.gemini.adapter import GeminiAdapter
from metis_core.adapters.vertex.auth import GoogleTokenSource
from metis_core.adapters.vertex.endpoint import DEFAULT_HOST, vertex_url
from metis_core.adapters.vertex.errors import classify_vertex_error, renamed
from metis_core.adapters.vertex.request import claude_history, claude_on_vertex, gemini_history, gemini_on_vertex
from metis_core.errors import ProviderError
from metis_core.messages import Message, ToolDefinition
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.models.registry import ModelRegistry


class _VertexPlatform(Adapter):
    """The parts both Vertex adapters share: URL, credentials, the front end's errors."""

    refreshes_auth: ClassVar[bool] = True
    default_base_url: ClassVar[str] = DEFAULT_HOST

    def __init__(self, registry: ModelRegistry | None = None) -> None:
        super().__init__(registry)
        self._init_tokens()

    def _init_tokens(self) -> None:
        self.tokens = GoogleTokenSource(self.provider)
        """Replace with `GoogleTokenSource(provider, credentials, project)` to use specific credentials."""

    def request_url(self, base_url: str, request: WireRequest) -> str:
        return vertex_url(base_url, request.path, request.query, self.tokens.project, self.provider)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens.token()}"}

    def vertex_error(self, response: WireResponse, publisher_error: ProviderError) -> ProviderError:
        named = classify_vertex_error(response, self.provider)
        return named if named is not None else renamed(publisher_error, self.provider)


class VertexGeminiAdapter(_VertexPlatform, GeminiAdapter):
    provider = "vertex"

    def to_wire(self, messages: list[Message], tools: list[ToolDefinition], options: AdapterOptions,
                tool_ids: ToolIdMap | None = None) -> WireRequest:
        request = super().to_wire(gemini_history(messages, self.provider), tools, options, tool_ids)
        return gemini_on_vertex(request, options.model_name)

    def classify_error(self, response: WireResponse) -> ProviderError:
        return self.vertex_error(response, super().classify_error(response))


class VertexAnthropicAdapter(_VertexPlatform, AnthropicAdapter):
    provider = "vertex_anthropic"

    def to_wire(self, messages: list[Message], tools: list[ToolDefinition], options: AdapterOptions,
                tool_ids: ToolIdMap | None = None) -> WireRequest:
        history = claude_history(messages, self.provider, options.model_name)
        return claude_on_vertex(super().to_wire(history, tools, options, tool_ids), options.model_name)

    def classify_error(self, response: WireResponse) -> ProviderError:
        return self.vertex_error(response, super().classify_error(response))
