"""An OpenRouter chat request body -> canonical form: the OpenAI chat reader plus reasoning.

`reasoning.effort` / `reasoning.max_tokens` become options (other reasoning keys such as `enabled`
stay in extra and merge back); assistant `reasoning_details` become origin-stamped thinking blocks
with the list kept verbatim in provider_raw, so the builder sends it back unchanged.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters.base import AdapterOptions
from metis_core.adapters.openai_chat.request_reader import ChatRequestReader
from metis_core.adapters.openrouter.reasoning import DETAILS_KEY, blocks_from_details
from metis_core.messages import BlockOrigin, ContentBlock, ThinkingBlock
from metis_core.models.model_id import parse_model_id

_EFFORTS = ("minimal", "low", "medium", "high")


class OpenRouterRequestReader(ChatRequestReader):
    api = "chat_completions"

    def read_options(self, body: dict[str, Any], extra: dict[str, Any]) -> AdapterOptions:
        options = super().read_options(body, extra)
        reasoning = options.extra.pop("reasoning", None)
        if isinstance(reasoning, dict):
            rest = dict(reasoning)
            if rest.get("effort") in _EFFORTS:
                options.reasoning_effort = rest.pop("effort")
            elif isinstance(rest.get("max_tokens"), int):
                options.thinking_budget_tokens = rest.pop("max_tokens")
            if rest:
                options.extra["reasoning"] = rest
        elif reasoning is not None:
            options.extra["reasoning"] = reasoning
        return options

    def origin(self) -> BlockOrigin:
        return BlockOrigin(provider=self.provider, api=self.api, model=parse_model_id(self.model).name)

    def reasoning_blocks(self, raw: dict[str, Any]) -> list[ContentBlock]:
        details = raw.get(DETAILS_KEY)
        if isinstance(details, list) and details:
            return blocks_from_details(details, self.origin())
        if isinstance(raw.get("reasoning"), str) and raw["reasoning"]:
            return [ThinkingBlock(text=raw["reasoning"], origin=self.origin())]
        return []

    def reasoning_raw(self, raw: dict[str, Any], provider_raw: dict[str, Any]) -> None:
        details = raw.get(DETAILS_KEY)
        if isinstance(details, list) and details:
            provider_raw[DETAILS_KEY] = details
