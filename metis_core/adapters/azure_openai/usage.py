"""Azure usage objects are OpenAI's (prompt/completion tokens, cached and reasoning details): the
OpenAI readers apply unchanged; this module names them for the Azure adapters."""

from __future__ import annotations

from metis_core.adapters.openai_chat.usage import usage_from_chat

__all__ = ["usage_from_chat"]
