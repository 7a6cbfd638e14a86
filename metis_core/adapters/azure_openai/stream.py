"""Azure chat streams and bodies: OpenAI chat chunks plus the content filter results Azure adds.

`prompt_filter_results` (a first chunk with no choices, or the body's top level) and each choice's
`content_filter_results` are kept in provider_raw["content_filter"] as Azure sent them, so the
record shows what the filter saw. An answer cut by the filter (`finish_reason: content_filter`)
ends with stop reason `refusal` and provider_raw["refusal"] naming the filter and its categories.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters.cloud_errors import tripped_categories
from metis_core.adapters.openai_chat.stream import ChatStreamTranslator
from metis_core.messages import StreamEvent

FILTER_KEY = "content_filter"
REFUSAL_KEY = "refusal"


class AzureChatStreamTranslator(ChatStreamTranslator):
    def note_filters(self, payload: dict[str, Any]) -> None:
        record: dict[str, Any] = self.raw.setdefault(FILTER_KEY, {})
        prompt = payload.get("prompt_filter_results")
        if isinstance(prompt, list) and prompt:
            record["prompt"] = prompt
        for choice in payload.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                results = choice.get("content_filter_results")
                if isinstance(results, dict) and results:
                    record.setdefault("completion", {}).update(results)
        if not record:
            del self.raw[FILTER_KEY]

    def apply_chunk(self, payload: dict[str, Any]) -> list[StreamEvent]:
        self.note_filters(payload)
        return super().apply_chunk(payload)

    def note_response(self, payload: dict[str, Any]) -> None:
        super().note_response(payload)
        if "object" in payload and payload.get("object") != "chat.completion.chunk":
            self.note_filters(payload)  # a whole body: apply_chunk does not see it

    def apply_finish_reason(self, reason: str) -> list[StreamEvent]:
        if reason == "content_filter":
            completion = self.raw.get(FILTER_KEY, {}).get("completion")
            self.raw[REFUSAL_KEY] = {"by": "azure_content_filter",
                                     "categories": tripped_categories(completion) or ["unspecified"]}
        return super().apply_finish_reason(reason)
