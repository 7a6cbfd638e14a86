"""Answers a provider paused mid-turn: the caller continues them by sending them back as they are.

Anthropic ends a long turn of server tools (web search, code execution) with `pause_turn`: the
answer so far is whole and valid, its last server tool call may have no result yet, and the same
request with that answer appended as the last message resumes the turn (the continuation opens
with the missing result). The canonical stop reason of a paused answer is `end_turn` (the closed
set has no pause); the provider's own reason stays in `provider_raw["stop_reason"]`, read here.
"""

from __future__ import annotations

from metis_core.messages import Message

PAUSE_REASONS = frozenset({"pause_turn"})
"""Raw stop reasons that mean "send this back to continue" (Anthropic's, under any provider name)."""
MAX_CONTINUATIONS = 8
"""Continuations of one paused answer before the agent stops asking (each is a paid call)."""


def paused(message: Message) -> bool:
    """True when `message` is a paused answer its provider expects to be sent back to continue."""
    raw = message.metadata.provider_raw or {}
    return raw.get("stop_reason", "") in PAUSE_REASONS
