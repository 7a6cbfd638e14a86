"""Signed thinking issued on a cloud platform, presented to the shared translator as its own.

A platform speaks a provider's API through that provider's translator, which replays signatures
only to its own origin. `restamp_origins` gives the translator copies of the messages whose
thinking blocks an origin rule accepts, stamped with the origin it checks; every other block is
still dropped and logged by the translator. The caller's messages are never changed.
"""

from __future__ import annotations

from collections.abc import Callable

from metis_core.messages import BlockOrigin, ContentBlock, Message, RedactedThinkingBlock, ThinkingBlock

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
