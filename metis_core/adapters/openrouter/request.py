"""Canonical -> OpenRouter chat request: the OpenAI chat body plus `reasoning` and replayed details.

Reasoning options become the `reasoning` object (effort, else max_tokens). An assistant message's
thinking travels back only as the verbatim `reasoning_details` list it arrived with, and only to
the same origin (openrouter, chat_completions, model); anywhere else each block is dropped and
logged. Provider routing (`AdapterOptions.extra["provider"]`) merges into the body unchanged.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters._common.replay import origin_mismatch_reason, replayable_to
from metis_core.adapters._common.tool_ids import IdStyle
from metis_core.adapters.openai_chat.request import ChatRequestBuilder
from metis_core.adapters.openrouter.reasoning import DETAILS_KEY
from metis_core.messages import Message, RedactedThinkingBlock, ThinkingBlock


class OpenRouterRequestBuilder(ChatRequestBuilder):
    # Ids go back exactly as the upstream issued them (Gemini's are longer than OpenAI's 40);
    # new ids are the canonical `tu_<ulid>` (29 characters, [A-Za-z0-9_]) that every upstream takes.
    default_id_style: IdStyle = "opaque"

    def reasoning_options(self, body: dict[str, Any]) -> None:
        reasoning: dict[str, Any] = {}
        if self.options.reasoning_effort is not None:
            reasoning["effort"] = self.options.reasoning_effort
        elif self.options.thinking_budget_tokens is not None:
            reasoning["max_tokens"] = self.options.thinking_budget_tokens
        if reasoning:
            body["reasoning"] = reasoning

    def replay_thinking(
        self,
        message: Message,
        blocks: list[tuple[int, ThinkingBlock | RedactedThinkingBlock]],
        wire: dict[str, Any],
    ) -> None:
        raw = message.metadata.provider_raw or {}
        details = raw.get(DETAILS_KEY)
        mismatched = [
            (index, block)
            for index, block in blocks
            if not replayable_to(block, self.namespace, self.api, self.model_name)
        ]
        if details and not mismatched:
            wire[DETAILS_KEY] = details  # verbatim: OpenRouter checks signatures byte for byte
            return
        for index, block in blocks:
            if mismatched:
                reason = origin_mismatch_reason(block, self.namespace, self.api, self.model_name)
            else:
                reason = "no reasoning_details were recorded with this message, so there is nothing to replay"
            self.drop(message, index, block.type, reason)
