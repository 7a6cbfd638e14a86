"""OpenRouter stream and response translation: OpenAI chat chunks plus reasoning and cost.

Adds to ChatStreamTranslator: `reasoning` / `reasoning_details` deltas as thinking blocks (before
the text, as they arrive), the detail list for replay in provider_raw, OpenRouter's reported cost
and upstream provider in provider_raw (never used as our cost: the price table computes that), its
web search count in `Usage.details`, and
origin-stamped thinking blocks even when no signature came. `: OPENROUTER PROCESSING` comments
are dropped by the SSE framing; errors inside an HTTP-200 stream are handled by the base class.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters._common.assembler import MessageAssembler
from metis_core.adapters.base import RequestContext
from metis_core.adapters.openai_chat.stream import ChatStreamTranslator
from metis_core.adapters.openai_chat.usage import usage_from_chat
from metis_core.adapters.openrouter.reasoning import DETAILS_KEY, DetailAccumulator
from metis_core.messages import Message, MessageStatus, RedactedThinkingBlock, StreamEvent, ThinkingBlock, UsageDetails
from metis_core.models.usage_normalization import detail_count

_COST_FIELDS = ("cost", "is_byok", "cost_details")


class OpenRouterAssembler(MessageAssembler):
    """Every OpenRouter thinking block carries its origin: the detail list replays only there."""

    def build(self, status: MessageStatus, stop_reason: str | None) -> Message:
        message = super().build(status, stop_reason)
        content = message.content
        for index, block in enumerate(content):
            if isinstance(block, ThinkingBlock | RedactedThinkingBlock) and block.origin is None:
                content[index] = block.model_copy(update={"origin": self.origin})  # blocks are values
        return message


class OpenRouterStreamTranslator(ChatStreamTranslator):
    assembler_class = OpenRouterAssembler

    def __init__(self, context: RequestContext) -> None:
        super().__init__(context)
        self._details = DetailAccumulator()
        self._verbatim: list[dict[str, Any]] | None = None

    def note_response(self, payload: dict[str, Any]) -> None:
        super().note_response(payload)
        if payload.get("provider"):
            self.raw["upstream_provider"] = payload["provider"]

    def apply_message(self, message: dict[str, Any]) -> None:
        details = message.get(DETAILS_KEY)
        if isinstance(details, list) and details:
            self._verbatim = details  # a whole response: keep the list exactly as sent
        super().apply_message(message)

    def apply_delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        if DETAILS_KEY not in delta and "reasoning" not in delta:  # most deltas: text or tool calls only
            return ChatStreamTranslator.apply_delta(self, delta)  # named: `super()` costs ~1K instructions a delta
        events: list[StreamEvent] = []
        details = delta.get(DETAILS_KEY)
        if details:
            for detail in details:
                events.extend(self._apply_detail(detail))
        elif isinstance(delta.get("reasoning"), str) and delta["reasoning"]:
            events.append(self.asm.thinking(("reasoning", 0, "reasoning.text"), delta["reasoning"]))
        events.extend(super().apply_delta(delta))
        return events

    def _apply_detail(self, detail: dict[str, Any]) -> list[StreamEvent]:
        self._details.add(detail)
        kind = detail.get("type")
        key = ("reasoning", detail.get("index", 0), kind)
        if kind == "reasoning.encrypted":
            if detail.get("data"):
                self.asm.redacted_thinking(key, detail["data"])
            return []
        text = detail.get("summary" if kind == "reasoning.summary" else "text")
        events: list[StreamEvent] = []
        if text:
            events.append(self.asm.thinking(key, text))
        if detail.get("signature"):
            self.asm.thinking_signature(key, detail["signature"])
        return events

    def apply_usage(self, usage: dict[str, Any]) -> StreamEvent:
        reported = {name: usage[name] for name in _COST_FIELDS if name in usage}
        if reported:
            self.raw["openrouter_usage"] = reported
        searches = detail_count(usage.get("server_tool_use_details"), "web_search_requests")
        if not searches:
            return super().apply_usage(usage)
        canonical = usage_from_chat(usage)  # plus the web searches OpenRouter ran (its `web` plugin)
        canonical.details = (canonical.details or UsageDetails()).model_copy(update={"web_search_requests": searches})
        return self.asm.set_usage(canonical)

    def complete_events(self) -> list[StreamEvent]:
        details = self._verbatim if self._verbatim is not None else self._details.details()
        if details:
            self.raw[DETAILS_KEY] = details
        return super().complete_events()
