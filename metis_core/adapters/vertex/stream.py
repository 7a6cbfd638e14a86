"""Vertex streams are the publisher's own: `streamGenerateContent?alt=sse` sends Gemini's SSE chunks,
`streamRawPredict` Anthropic's event stream. The shared translators read them unchanged."""

from __future__ import annotations

from metis_core.adapters.anthropic.stream import AnthropicStreamTranslator
from metis_core.adapters.gemini.stream import GeminiStreamTranslator

__all__ = ["AnthropicStreamTranslator", "GeminiStreamTranslator"]
