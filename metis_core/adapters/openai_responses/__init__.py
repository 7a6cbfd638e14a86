"""OpenAI's Responses API (`POST /v1/responses`, semantic SSE events): see docs/adapters/openai_responses.md."""

from metis_core.adapters.openai_responses.adapter import OpenAIResponsesAdapter

__all__ = ["OpenAIResponsesAdapter"]
