"""`AzureChatAdapter` (`azure:<deployment>`) and `AzureResponsesAdapter` (`azure_responses:<deployment>`).

OpenAI's adapters with Azure's endpoint (endpoint.py), credentials (auth.py: `api-key` or an
Entra ID token, refreshed by the adapter, so `refreshes_auth` is set), error names (errors.py) and
content filter record (stream.py). The deployment name is the model name of the id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.azure_openai.auth import EntraTokenSource, azure_auth_headers
from metis_core.adapters.azure_openai.endpoint import api_version, azure_url
from metis_core.adapters.azure_openai.errors import classify_azure_error
from metis_core.adapters.azure_openai.request import build_responses_request
from metis_core.adapters.azure_openai.response import parse_azure_chat_response
from metis_core.adapters.azure_openai.stream import AzureChatStreamTranslator
from metis_core.adapters.base import Adapter, AdapterOptions, RequestContext, WireRequest
from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.adapters.openai_chat.stream import ChatStreamTranslator
from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter
from metis_core.errors import ProviderError
from metis_core.messages import Message, ToolDefinition
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.models.registry import ModelRegistry


class _AzurePlatform(Adapter):
    """The parts both Azure adapters share: URL, credentials, errors."""

    refreshes_auth: ClassVar[bool] = True
    default_base_url: ClassVar[str] = ""  # none: each Azure resource has its own endpoint

    def __init__(self, registry: ModelRegistry | None = None) -> None:
        super().__init__(registry)
        self._init_tokens()

    def _init_tokens(self) -> None:
        self.tokens = EntraTokenSource(self.provider)
        """Replace with `EntraTokenSource(provider, credential)` to use a specific azure-identity credential."""

    def request_url(self, base_url: str, request: WireRequest) -> str:
        deployment = str(request.body.get("model", ""))
        return azure_url(base_url, request.path, deployment, request.query, api_version())

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return azure_auth_headers(api_key, self.tokens)

    def classify_error(self, response: WireResponse) -> ProviderError:
        return classify_azure_error(response, self.provider)


class AzureChatAdapter(_AzurePlatform, OpenAIChatAdapter):
    provider = "azure"
    translator_class: ClassVar[type[ChatStreamTranslator]] = AzureChatStreamTranslator

    def from_wire_response(self, response: WireResponse, context: RequestContext) -> Message:
        translator = self.stream_translator(context)
        assert isinstance(translator, AzureChatStreamTranslator)
        return parse_azure_chat_response(response, translator)


class AzureResponsesAdapter(_AzurePlatform, OpenAIResponsesAdapter):
    provider = "azure_responses"

    def to_wire(self, messages: list[Message], tools: list[ToolDefinition], options: AdapterOptions,
                tool_ids: ToolIdMap | None = None) -> WireRequest:
        ids = tool_ids if tool_ids is not None else ToolIdMap()
        return build_responses_request(self.provider, messages, tools, options, ids,
                                       self._capabilities_for(options.model))
