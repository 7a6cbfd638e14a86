"""Adapters by provider key. Classes are imported on first use so unused providers cost nothing.

A named provider (a METIS_PROVIDER_<NAME> DSN) speaks through its kind's adapter, as a subclass
whose `provider` is the name: errors, tool ids and block origins then name that server.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

from metis_core.errors import UnsupportedProviderError

if TYPE_CHECKING:
    from metis_core.adapters.base import Adapter

# provider key -> "module:Class"
ADAPTERS: dict[str, str] = {
    "anthropic": "metis_core.adapters.anthropic.adapter:AnthropicAdapter",
    "openai": "metis_core.adapters.openai_chat.adapter:OpenAIChatAdapter",
    "openai_responses": "metis_core.adapters.openai_responses.adapter:OpenAIResponsesAdapter",
    "gemini": "metis_core.adapters.gemini.adapter:GeminiAdapter",
    "ollama": "metis_core.adapters.ollama.adapter:OllamaAdapter",
    "openrouter": "metis_core.adapters.openrouter.adapter:OpenRouterAdapter",
    "openai_compatible": "metis_core.adapters.openai_compatible.adapter:OpenAICompatibleAdapter",
    "bedrock": "metis_core.adapters.bedrock.adapter:BedrockAdapter",
    # cloud platforms (docs/adapters/azure.md, docs/adapters/vertex.md)
    "azure": "metis_core.adapters.azure_openai.adapter:AzureChatAdapter",
    "azure_responses": "metis_core.adapters.azure_openai.adapter:AzureResponsesAdapter",
    "vertex": "metis_core.adapters.vertex.adapter:VertexGeminiAdapter",
    "vertex_anthropic": "metis_core.adapters.vertex.adapter:VertexAnthropicAdapter",
}


def adapter_class(provider: str) -> type[Adapter]:
    target = ADAPTERS.get(provider)
    if target is None:
        known = ", ".join(sorted(ADAPTERS))
        raise UnsupportedProviderError(f"no adapter for provider {provider!r}; known providers: {known}")
    module_name, _, class_name = target.partition(":")
    cls: type[Adapter] = getattr(importlib.import_module(module_name), class_name)
    return cls


@cache
def named_adapter_class(kind: str, name: str) -> type[Adapter]:
    """The adapter of `kind`, reporting `name` as its provider (one class per name)."""
    base = adapter_class(kind)
    if name == kind:
        return base
    return type(f"{base.__name__}[{name}]", (base,), {"provider": name, "__module__": base.__module__})


@cache
def get_adapter(provider: str) -> Adapter:
    """The shared adapter instance for a provider key (adapters are stateless translators)."""
    return adapter_class(provider)()


def provider_keys() -> list[str]:
    return sorted(ADAPTERS)
