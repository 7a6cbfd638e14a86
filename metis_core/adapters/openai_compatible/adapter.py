"""`OpenAICompatibleAdapter`: OpenAI chat to a server named by its base URL, keyless when no key is set.

There is no default base URL: it comes from `providers.openai_compatible.base_url` in config.yaml
or METIS_OPENAI_COMPATIBLE_BASE_URL. With no key configured no Authorization header is sent.
"""

from __future__ import annotations

from metis_core.adapters.openai_chat.adapter import OpenAIChatAdapter
from metis_core.adapters.openai_compatible.request import CompatibleRequestBuilder
from metis_core.adapters.openai_compatible.stream import CompatibleStreamTranslator


class OpenAICompatibleAdapter(OpenAIChatAdapter):
    provider = "openai_compatible"
    default_base_url = ""

    builder_class = CompatibleRequestBuilder
    translator_class = CompatibleStreamTranslator
