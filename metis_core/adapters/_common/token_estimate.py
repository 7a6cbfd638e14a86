"""A fast pre-flight input-token estimate: ~4 characters per token over what a request carries.

Walks the canonical blocks directly (no model_dump), so the capability pre-check that runs before
every call costs a few microseconds per message. Deliberately provider-agnostic and approximate:
it guards the context window, it does not predict the bill (providers report exact usage).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from metis_core.adapters._common.per_tool_cache import PerToolCache
from metis_core.messages import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1_600
"""A typical image at the providers' default resolution (Anthropic: ~1.15 MP -> ~1,600 tokens)."""
BLOCK_OVERHEAD_CHARS = 20
MESSAGE_OVERHEAD_CHARS = 8


def estimate_tokens(messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> int:
    chars = 0
    images = 0
    for message in messages:
        chars += MESSAGE_OVERHEAD_CHARS
        for block in message.content:
            chars += BLOCK_OVERHEAD_CHARS
            if type(block) is TextBlock:
                chars += len(block.text)
            elif type(block) is ToolUseBlock:
                chars += len(block.name) + len(orjson.dumps(block.input))
            elif type(block) is ToolResultBlock:
                for item in block.content:
                    if isinstance(item, TextBlock):
                        chars += len(item.text) + BLOCK_OVERHEAD_CHARS
                    else:
                        images += 1
            elif isinstance(block, ImageBlock):
                images += 1
            elif isinstance(block, ThinkingBlock):
                chars += len(block.text)
            elif isinstance(block, RedactedThinkingBlock):
                chars += len(block.data)
    for tool in tools:
        chars += _tool_chars(tool)
    return chars // CHARS_PER_TOKEN + images * IMAGE_TOKENS


def _size(tool: ToolDefinition) -> int:
    return len(tool.name) + len(tool.description) + len(orjson.dumps(tool.input_schema))


_tool_chars = PerToolCache(_size)
