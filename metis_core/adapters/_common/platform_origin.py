"""Signed thinking issued on a cloud platform, presented to the shared translator as its own.

A platform speaks a provider's API through that provider's translator, which replays signatures
only to its own origin. `restamp_origins` gives the translator copies of the messages whose
thinking blocks an origin rule accepts, stamped with the origin it checks; every other block is
still dropped and logged by the translator. The caller's messages are never changed.
"""

from __future__ import annotations

from collections.abc import Callable

from metis_core.messages import BlockOrigin, ContentBlock, Message, RedactedThinkingBlock, ThinkingBlock

CLAUDE_SIGNERS = frozenset({"anthropic", "vertex_anthropic"})
"""Where Claude runs with signatures Anthropic documents as valid on the others, for the same model."""

OriginRule = Callable[[BlockOrigin], BlockOrigin | None]
"""An issuing origin -> the origin the translator should see, or None to leave the block as it is."""


def restamp_origins(messages: list[Message], rule: OriginRule) -> list[Message]:
    out: list[Message] = []
    for message in messages:
        content: list[ContentBlock] | None = None
        for index, block in enumerate(message.content):
            if not isinstance(block, ThinkingBlock | RedactedThinkingBlock) or block.origin is None:
                continue
            target = rule(block.origin)
            if target is None or target == block.origin:
                continue
            if content is None:
                content = list(message.content)
            content[index] = block.model_copy(update={"origin": target})
        out.append(message if content is None else message.model_copy(update={"content": content}))
    return out


def claude_model_key(model: str) -> str:
    """One spelling for a Claude model on every platform: `claude-sonnet-4@20250514` -> `claude-sonnet-4-20250514`."""
    return model.replace("@", "-")


def claude_signature_travels(origin: BlockOrigin | None, model: str) -> bool:
    """True when a Claude thinking block signed at `origin` is valid for `model` on another Claude platform."""
    return (origin is not None and origin.provider in CLAUDE_SIGNERS and origin.api == "messages"
            and claude_model_key(origin.model) == claude_model_key(model))
