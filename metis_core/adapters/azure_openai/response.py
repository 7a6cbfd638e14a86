"""A non-streaming Azure chat body -> one canonical Message: OpenAI's parser fed through the Azure
translator, so filter results and a filtered answer's refusal are kept as in a stream."""

from __future__ import annotations

from metis_core.adapters.azure_openai.stream import AzureChatStreamTranslator
from metis_core.adapters.openai_chat.response import parse_chat_response
from metis_core.messages import Message
from metis_core.transport.wire import WireResponse


def parse_azure_chat_response(response: WireResponse, translator: AzureChatStreamTranslator) -> Message:
    return parse_chat_response(response, translator)
