"""Canonical model ids: `<provider>:<model>`, with the model part kept verbatim.

Only the first colon separates: `ollama:qwen3:8b` is provider `ollama`, model `qwen3:8b`;
`openrouter:deepseek/deepseek-v3` keeps its slash. Nothing is lower-cased or stripped.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from metis_core.errors import ModelIdError


class ModelId(NamedTuple):
    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


@lru_cache(maxsize=1024)
def parse_model_id(value: str) -> ModelId:
    """`provider:name` split at the first colon (ModelIdError otherwise). Cached: a call parses the
    same id three or four times, and ModelId is an immutable tuple; a failure is not cached."""
    provider, sep, name = value.partition(":")
    if not sep or not provider or not name or provider.strip() != provider or name.strip() != name:
        raise ModelIdError(
            f"{value!r} is not a model id; write it as <provider>:<model>, e.g. anthropic:claude-sonnet-4-6"
        )
    return ModelId(provider, name)
