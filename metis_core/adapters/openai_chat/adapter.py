"""`OpenAIChatAdapter`: the Adapter contract for OpenAI Chat Completions, wired from this folder.

Small on purpose: each concern lives in its own module (request, request_reader, response,
stream, errors, usage). OpenAI-compatible dialects subclass this class and swap the builder,
reader or translator class attributes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import Adapter, AdapterOptions, RequestContext, WireRequest
from metis_core.adapters.openai_chat.request import ChatRequestBuilder
from metis_core.adapters.openai_chat.response import parse_chat_response, read_chat_response
from metis_core.errors import ProviderError
from metis_core.messages import Message
from metis_core.models.capabilities import AdapterCapabilities
from metis_core.transport.wire import WireResponse

if TYPE_CHECKING:
    from metis_core.adapters.openai_chat.request_reader import ChatRequest, ChatRequestReader
    from metis_core.adapters.openai_chat.stream import ChatStreamTranslator
    from metis_core.messages import ToolDefinition
    from metis_core.structured.plan import StructuredPlan
    from metis_core.structured.spec import OutputSpec


def _chat_reader() -> type[ChatRequestReader]:
    """Imported on first use: reading a request back serves proxies and imports, never a call."""
    from metis_core.adapters.openai_chat.request_reader import ChatRequestReader

    return ChatRequestReader


def _chat_translator() -> type[ChatStreamTranslator]:
    """Imported with the first stream: Chat Completions' own body is read without it (response.py)."""
    from metis_core.adapters.openai_chat.stream import ChatStreamTranslator

    return ChatStreamTranslator


class OpenAIChatAdapter(Adapter):
    provider = "openai"
    api = "chat_completions"
    framing = "sse"
    default_base_url = "https://api.openai.com/v1"
    path: ClassVar[str] = "/chat/completions"

    builder_class: ClassVar[type[ChatRequestBuilder]] = ChatRequestBuilder
    reader_class: ClassVar[type[ChatRequestReader] | None] = None
    """None: Chat Completions' own reader. Dialects with additions name theirs."""
    translator_class: ClassVar[type[ChatStreamTranslator] | None] = None
    """None: Chat Completions' own translator, and its body read directly. Dialects with additions name theirs."""

    @property
    def adapter_name(self) -> str:
        return f"{self.provider}/{self.api}"

    def to_wire(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: AdapterOptions,
        tool_ids: ToolIdMap | None = None,
    ) -> WireRequest:
        builder = self.builder_class(
            provider=self.provider,
            capabilities=self.capabilities(options.model),
            options=options,
            tool_ids=tool_ids if tool_ids is not None else ToolIdMap(),
            adapter_name=self.adapter_name,
        )
        body = builder.build(messages, tools)
        return WireRequest(
            path=self.path, body=body, stream=options.stream, headers=self.request_headers(), dropped=builder.dropped,
            encoded=tuple(builder.encoded),
        )

    def request_headers(self) -> dict[str, str]:
        """Non-secret headers every request carries (none for OpenAI itself)."""
        return {}

    def read_request(
        self, body: dict[str, Any], *, tool_ids: ToolIdMap | None = None, session_id: str = ""
    ) -> ChatRequest:
        """An inbound chat request body in canonical form (the inverse of `to_wire`)."""
        reader = self.reader_class or _chat_reader()
        return reader(provider=self.provider, tool_ids=tool_ids, session_id=session_id).read(body)

    def from_wire_response(self, response: WireResponse, context: RequestContext) -> Message:
        if self.translator_class is None:  # Chat Completions itself: the body read directly
            return read_chat_response(response, context)
        # a dialect's additions (reasoning, think tags) live in its translator: its body is applied through it
        return parse_chat_response(response, self.translator_class(context))

    def stream_translator(self, context: RequestContext) -> ChatStreamTranslator:
        return (self.translator_class or _chat_translator())(context)

    def structured_plan(self, spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
        from metis_core.adapters.openai_chat.structured import openai_structured_plan  # structured calls only

        return openai_structured_plan(spec, capabilities, model)

    def classify_error(self, response: WireResponse) -> ProviderError:
        from metis_core.adapters.openai_chat.errors import classify_chat_error  # error answers only

        return classify_chat_error(response, self.provider)

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}
