"""Anthropic Messages API adapter (`POST /v1/messages`, SSE streaming). See docs/adapters/anthropic.md."""
