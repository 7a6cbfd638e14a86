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
    Role,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.models.fit import HistoryShape

_SYSTEM = Role.SYSTEM
CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1_600
"""A typical image at the providers' default resolution (Anthropic: ~1.15 MP -> ~1,600 tokens)."""
BLOCK_OVERHEAD_CHARS = 20
MESSAGE_OVERHEAD_CHARS = 8


def estimate_tokens(messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> int:
    return survey_history(messages, tools)[0]


def survey_history(messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> tuple[int, HistoryShape]:
    """(estimated input tokens, history shape for `check_fits`), in one pass over the blocks."""
    chars = 0
    images = 0
    tool_calls = False
    system = False
    for message in messages:
        chars += MESSAGE_OVERHEAD_CHARS
        if message.role is _SYSTEM:
            system = True
        for block in message.content:
            chars += BLOCK_OVERHEAD_CHARS
            if type(block) is TextBlock:
                chars += len(block.text)
            elif type(block) is ToolUseBlock:
                tool_calls = True
                chars += len(block.name) + len(orjson.dumps(block.input))
            elif type(block) is ToolResultBlock:
                tool_calls = True
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
    return chars // CHARS_PER_TOKEN + images * IMAGE_TOKENS, (images, tool_calls, system)


def _size(tool: ToolDefinition) -> int:
    return len(tool.name) + len(tool.description) + len(orjson.dumps(tool.input_schema))


_tool_chars = PerToolCache(_size)
