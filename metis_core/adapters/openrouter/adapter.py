"""`OpenRouterAdapter`: OpenAI chat over openrouter.ai, with OpenRouter's additions swapped in.

Optional attribution headers (`HTTP-Referer`, `X-Title`) come from the constructor, or from the
config file's `providers.openrouter.headers`, which the transport sends as-is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.adapters.openrouter.request import OpenRouterRequestBuilder
from metis_core.adapters.openrouter.request_reader import OpenRouterRequestReader
from metis_core.adapters.openrouter.stream import OpenRouterStreamTranslator
from metis_core.models.capabilities import AdapterCapabilities

if TYPE_CHECKING:
    from metis_core.models.registry import ModelRegistry
    from metis_core.structured.plan import StructuredPlan
    from metis_core.structured.spec import OutputSpec


class OpenRouterAdapter(OpenAIChatAdapter):
    provider = "openrouter"
    default_base_url = "https://openrouter.ai/api/v1"

    builder_class = OpenRouterRequestBuilder
    reader_class = OpenRouterRequestReader
    translator_class = OpenRouterStreamTranslator

    def __init__(
        self, registry: ModelRegistry | None = None, *, referer: str | None = None, title: str | None = None
    ) -> None:
        super().__init__(registry)
        self.referer = referer
        self.title = title

    def structured_plan(self, spec: OutputSpec, capabilities: AdapterCapabilities, model: str) -> StructuredPlan:
        from metis_core.adapters.openrouter.structured import openrouter_structured_plan  # structured calls only

        return openrouter_structured_plan(spec, capabilities, model)

    def request_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.referer:
            headers["HTTP-Referer"] = self.referer
        if self.title:
            headers["X-Title"] = self.title
        return headers
