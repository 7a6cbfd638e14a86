"""Compatible-server streams: OpenAI chat chunks, and what vendors add to them.

- `delta.reasoning_content` (DeepSeek, vLLM, llama.cpp) or `delta.reasoning` (Groq parsed,
  Cerebras) becomes a ThinkingBlock with no signature.
- Thinking written into the text as `<think>...</think>` (Groq's raw reasoning format, models
  served without a reasoning parser) is split out the same way, across chunk boundaries.
- Content sent as a list of chunks, with `{"type": "thinking", "thinking": [{"type": "text",
  "text": ...}]}` beside the text (Mistral's Magistral), keeps the thinking.
- Perplexity's top-level `search_results` (or bare `citations` URLs) become citations of the text.
- Groq reports a stream's usage under `x_groq.usage` on its last chunk.
- Gemini's OpenAI endpoint puts its thought signature in the message's `extra_content`; it is kept
  in provider_raw (EXTRA_KEY) and goes back to the same model (request.py).

Such thinking is never sent back: DeepSeek rejects it in the history and no server needs it.
"""

from __future__ import annotations

from typing import Any

from metis_core.adapters.openai_chat.stream import ChatStreamTranslator
from metis_core.messages import Citation, StreamEvent

OPEN, CLOSE = "<think>", "</think>"
EXTRA_KEY = "extra_content"
"""provider_raw key: the message's `extra_content` exactly as received (Gemini's `google.thought_signature`)."""


def _partial_suffix(text: str, tag: str) -> int:
    """How many trailing characters of `text` could begin `tag` (kept back until the next chunk)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class CompatibleStreamTranslator(ChatStreamTranslator):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._think: bool | None = None
        """None before any text, True inside a leading <think> block, False after it (or without one)."""
        self._held = ""
        self._sources: list[dict[str, Any]] = []

    def apply_chunk(self, payload: dict[str, Any]) -> list[StreamEvent]:
        self._note_sources(payload)
        events = super().apply_chunk(payload)
        groq = payload.get("x_groq")
        if not payload.get("usage") and isinstance(groq, dict) and isinstance(groq.get("usage"), dict):
            events.append(self.apply_usage(groq["usage"]))
        return events

    def note_response(self, payload: dict[str, Any]) -> None:
        super().note_response(payload)
        self._note_sources(payload)  # a whole (non-streaming) body

    def _note_sources(self, payload: dict[str, Any]) -> None:
        if self._sources:
            return  # Perplexity repeats them on every chunk
        results = payload.get("search_results")
        if isinstance(results, list) and results:
            self._sources = [r for r in results if isinstance(r, dict)]
        elif isinstance(payload.get("citations"), list):
            self._sources = [{"url": url} for url in payload["citations"] if isinstance(url, str)]

    def apply_delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        extra = delta.get(EXTRA_KEY)
        if isinstance(extra, dict) and extra:
            self.raw[EXTRA_KEY] = extra
        thinking = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(thinking, str) and thinking:
            events.append(self.asm.thinking("reasoning", thinking))
        content = delta.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") == "thinking":
                    text = "".join(p.get("text", "") for p in part.get("thinking") or () if isinstance(p, dict))
                    if text:
                        events.append(self.asm.thinking("reasoning", text))
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") != "thinking")
        if isinstance(content, str) and content:
            events.extend(self._text(content))
        rest = {k: v for k, v in delta.items() if k != "content"}
        events.extend(super().apply_delta(rest))
        return events

    def _text(self, content: str) -> list[StreamEvent]:
        """Text, with a leading <think>...</think> block taken out as thinking."""
        held = self._held + content
        self._held = ""
        events: list[StreamEvent] = []
        while held:
            if self._think is None:
                stripped = held.lstrip()
                if not stripped or (OPEN.startswith(stripped) and len(stripped) < len(OPEN)):
                    self._held = held  # wait: only whitespace, or the start of a tag
                    return events
                self._think = stripped.startswith(OPEN)
                held = stripped[len(OPEN):] if self._think else held
            elif self._think:
                end = held.find(CLOSE)
                if end >= 0:
                    if held[:end]:
                        events.append(self.asm.thinking("reasoning", held[:end]))
                    held, self._think = held[end + len(CLOSE):].lstrip(), False
                    continue
                keep = _partial_suffix(held, CLOSE)
                if held[: len(held) - keep]:
                    events.append(self.asm.thinking("reasoning", held[: len(held) - keep]))
                self._held = held[len(held) - keep:]
                return events
            else:
                events.append(self.asm.text("text", held))
                return events
        return events

    def complete_events(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if self._held:  # what was held back at the end: thinking still open, or plain text
            held = self._held
            events.append(self.asm.thinking("reasoning", held) if self._think else self.asm.text("text", held))
            self._held = ""
        if self._sources and self.asm.has_text("text"):
            events.extend(self.asm.citation("text", Citation(url=s.get("url"), title=s.get("title"), payload=s,
                                                             origin=self.asm.origin)) for s in self._sources)
        return [*events, *super().complete_events()]
