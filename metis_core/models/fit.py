"""Does a conversation fit a model? The capability pre-check run before any request and on /model swaps.

`check_fits` raises CapabilityMismatchError naming the first capability the target lacks, so a
swap is refused (and routing can fall through) before anything reaches the network. It reads
declarations only; it does not drop content (adapters do that for what slips through) and it does
not count tokens itself — the caller passes the adapter's estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from metis_core.errors import CapabilityMismatchError
from metis_core.messages import ImageBlock, Message, Role, ToolResultBlock, ToolUseBlock
from metis_core.models.capabilities import AdapterCapabilities

if TYPE_CHECKING:
    from metis_core.messages import ToolDefinition

_SYSTEM = Role.SYSTEM


def count_images(messages: Sequence[Message]) -> int:
    """Images anywhere in the history, including inside tool results."""
    return _survey(messages)[0]


def _survey(messages: Sequence[Message]) -> tuple[int, bool, bool]:
    """One pass over the history: (images, holds tool calls or results, holds a system message)."""
    images = 0
    tool_calls = False
    system = False
    for message in messages:
        if message.role is _SYSTEM:
            system = True
        for block in message.content:
            if type(block) is ImageBlock:
                images += 1
            elif type(block) is ToolResultBlock:
                tool_calls = True
                images += sum(1 for item in block.content if type(item) is ImageBlock)
            elif type(block) is ToolUseBlock:
                tool_calls = True
    return images, tool_calls, system


HistoryShape = tuple[int, bool, bool]
"""(images, holds tool calls or results, holds a system message)."""


def check_fits(
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    capabilities: AdapterCapabilities,
    model: str,
    estimated_input_tokens: int,
    *,
    structured_output: bool = False,
    shape: HistoryShape | None = None,
) -> None:
    """Raise CapabilityMismatchError if `model` cannot carry this history, tools and request.

    `shape` lets a caller that already walked the history (the client, while estimating tokens)
    pass what it saw instead of walking it again.
    """
    images, has_tool_calls, has_system = shape if shape is not None else _survey(messages)
    if images and not capabilities.supports_images:
        raise CapabilityMismatchError(
            model,
            "supports_images",
            f"the conversation holds {images} image(s) and this model takes no image input; "
            "pick a model with image support or start a new session",
        )
    if not capabilities.supports_tools:
        if tools:
            raise CapabilityMismatchError(
                model,
                "supports_tools",
                f"{len(tools)} tool(s) are offered and this model cannot call tools; "
                "pick a tool-capable model or disable the tools",
            )
        if has_tool_calls:
            raise CapabilityMismatchError(
                model,
                "supports_tools",
                "the conversation holds tool calls and results this model cannot read; "
                "pick a tool-capable model",
            )
    if not capabilities.supports_system_prompt and has_system:
        raise CapabilityMismatchError(
            model,
            "supports_system_prompt",
            "the conversation has a system prompt and this model takes none; pick another model",
        )
    if structured_output and not capabilities.supports_structured_output:
        raise CapabilityMismatchError(
            model,
            "supports_structured_output",
            "structured output was requested and this model cannot guarantee it; "
            "pick a model with structured output or drop response_format",
        )
    if estimated_input_tokens > capabilities.max_context_tokens:
        raise CapabilityMismatchError(
            model,
            "max_context_tokens",
            f"the conversation is about {estimated_input_tokens:,} tokens and this model holds at most "
            f"{capabilities.max_context_tokens:,}; compact the session or pick a model with a larger context",
        )
