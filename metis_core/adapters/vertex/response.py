"""Vertex response bodies are the publisher's own: Gemini's `GenerateContentResponse` and Anthropic's
Messages response (ids `msg_vrtx_...`). The shared parsers read them; blocks are stamped with this
provider and the Vertex model id (`claude-sonnet-4@20250514`), the origin a later replay checks."""

from __future__ import annotations

from metis_core.adapters.anthropic.response import parse_response as parse_claude_response
from metis_core.adapters.gemini.response import parse_response as parse_gemini_response

__all__ = ["parse_claude_response", "parse_gemini_response"]
