"""Vertex usage is the publisher's own (Gemini `usageMetadata`, Anthropic `usage`): the shared readers
apply. Prices come from the registry's `vertex:` / `vertex_anthropic:` entries, never from Vertex."""

from __future__ import annotations

from metis_core.adapters.anthropic.usage import usage_from_wire as usage_from_anthropic
from metis_core.adapters.gemini.usage import usage_from_gemini

__all__ = ["usage_from_anthropic", "usage_from_gemini"]
