"""Canonical -> Azure request bodies: OpenAI's builders, the deployment name as `model`.

Chat Completions bodies are OpenAI's unchanged. On the Responses API, encrypted reasoning issued
by this Azure provider replays to the same deployment; reasoning from OpenAI direct or another
deployment is dropped and logged (Azure does not document accepting reasoning encrypted elsewhere).
"""

from __future__ import annotations

from metis_core.adapters._common.platform_origin import restamp_origins
from metis_core.adapters._common.tool_ids import ToolIdMap
from metis_core.adapters.base import AdapterOptions, WireRequest
from metis_core.adapters.openai_responses.raw import PROVIDER as RESPONSES_PROVIDER
from metis_core.adapters.openai_responses.request import build_request
from metis_core.messages import BlockOrigin, Message, ToolDefinition
from metis_core.models.capabilities import AdapterCapabilities


def build_responses_request(provider: str, messages: list[Message], tools: list[ToolDefinition],
                            options: AdapterOptions, tool_ids: ToolIdMap,
                            capabilities: AdapterCapabilities) -> WireRequest:
    def own(origin: BlockOrigin) -> BlockOrigin | None:
        if origin.provider == provider:
            return BlockOrigin(provider=RESPONSES_PROVIDER, api=origin.api, model=origin.model)
        if origin.provider == RESPONSES_PROVIDER:  # OpenAI direct, even for a same-named deployment
            return BlockOrigin(provider="openai", api=origin.api, model=origin.model)
        return None

    return build_request(restamp_origins(messages, own), tools, options, tool_ids, capabilities)
