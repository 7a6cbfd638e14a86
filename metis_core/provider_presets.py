"""The OpenAI-compatible vendors metis knows by name: `mistral:`, `deepseek:`, `xai:`, `groq:`,
`together:`, `fireworks:`, `cerebras:`, `perplexity:` work with only the vendor's usual key variable
set (MISTRAL_API_KEY ...), as a named provider of kind `openai_compatible` with the vendor's base
URL. A METIS_PROVIDER_<NAME> DSN or METIS_<NAME>_BASE_URL still overrides either. Capabilities and
prices live in the registry and price table; deviations from the OpenAI shape are read by the
compatible stream translator (adapters/openai_compatible/stream.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class VendorPreset:
    name: str
    base_url: str
    key_variable: str
    docs: str
    """The vendor's API reference for its OpenAI-compatible endpoint."""


VENDOR_PRESETS: dict[str, VendorPreset] = {p.name: p for p in (
    VendorPreset("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY",
                 "https://docs.mistral.ai/api/"),
    VendorPreset("deepseek", "https://api.deepseek.com", "DEEPSEEK_API_KEY",
                 "https://api-docs.deepseek.com/"),
    VendorPreset("xai", "https://api.x.ai/v1", "XAI_API_KEY", "https://docs.x.ai/docs/api-reference"),
    VendorPreset("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "https://console.groq.com/docs/openai"),
    VendorPreset("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY",
                 "https://docs.together.ai/docs/openai-api-compatibility"),
    VendorPreset("fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY",
                 "https://docs.fireworks.ai/tools-sdks/openai-compatibility"),
    VendorPreset("cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY",
                 "https://inference-docs.cerebras.ai/resources/openai"),
    VendorPreset("perplexity", "https://api.perplexity.ai", "PERPLEXITY_API_KEY",
                 "https://docs.perplexity.ai/api-reference/chat-completions-post"),
)}
