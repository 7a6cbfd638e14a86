"""Ollama's native chat API (`POST /api/chat`, NDJSON streaming): see docs/adapters/ollama.md."""

from metis_core.adapters.ollama.adapter import OllamaAdapter

__all__ = ["OllamaAdapter"]
