"""Compatible-server streams: OpenAI chat chunks, plus the `reasoning_content` some servers add.

vLLM, DeepSeek and llama.cpp (with a reasoning parser) put the model's thinking in
`delta.reasoning_content` (or `reasoning`); it becomes a ThinkingBlock with no signature. Such
thinking is never sent back: DeepSeek rejects it in the history and no server needs it.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters.openai_chat.stream import ChatStreamTranslator
from metis_core.messages import StreamEvent


class CompatibleStreamTranslator(ChatStreamTranslator):
    def apply_delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        thinking = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(thinking, str) and thinking:
            events.append(self.asm.thinking("reasoning", thinking))
        events.extend(super().apply_delta(delta))
        return events
