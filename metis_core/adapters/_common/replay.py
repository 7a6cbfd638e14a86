"""Which opaque provider tokens may be replayed to a target.

A thinking signature, a redacted-thinking blob, an encrypted reasoning item or a Gemini thought
signature is only valid at the provider, API and model that issued it. Everything else drops such
blocks (never demoting them to text) through the lossy-projection log.
"""

from __future__ import annotations

from metis_core.messages import BlockOrigin, RedactedThinkingBlock, ThinkingBlock


def replayable_to(block: ThinkingBlock | RedactedThinkingBlock, provider: str, api: str, model: str) -> bool:
    """True when the block's origin is exactly this target."""
    origin: BlockOrigin | None = block.origin
    return origin is not None and origin.matches(provider, api, model)


def origin_mismatch_reason(block: ThinkingBlock | RedactedThinkingBlock, provider: str, api: str, model: str) -> str:
    origin = block.origin
    if origin is None:
        return "thinking block has no recorded origin, so its signature cannot be trusted by any target"
    return (
        f"signed by {origin.provider}/{origin.api}/{origin.model}; a signature is only valid there, "
        f"not at {provider}/{api}/{model}"
    )
