"""The older turns as plain text for a summarising model, in parts that fit its window.

Any model can summarise any conversation: tool calls, results and hosted blocks are written out as
labelled lines (long results cut), so nothing provider-specific reaches the summariser.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import orjson

from metis_core.messages import (
    CompactionBlock,
    ImageBlock,
    Message,
    ProviderToolCallBlock,
    ProviderToolResultBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

SUMMARY_INSTRUCTIONS = (
    "You compact a conversation between a user and an AI assistant so it can go on in a smaller context. "
    "Write a faithful summary that the assistant will read instead of the messages. Keep: the user's goals, "
    "requests and constraints; decisions made and why; facts learned (names, paths, numbers, values, errors) "
    "and what tools returned that still matters; work done and its state; open questions and next steps. "
    "Drop pleasantries and repetition. Plain text or short bullet points, no preamble."
)
RESULT_CHARS = 2_000
"""Characters of one tool result a transcript keeps."""


def render(message: Message) -> str:
    lines: list[str] = []
    role = message.role.value
    for block in message.content:
        if isinstance(block, TextBlock):
            lines.append(f"{role}: {block.text}")
        elif isinstance(block, ToolUseBlock):
            lines.append(f"{role} called tool {block.name} with {orjson.dumps(block.input).decode()}")
        elif isinstance(block, ToolResultBlock):
            text = block.text()
            if len(text) > RESULT_CHARS:
                text = text[:RESULT_CHARS] + f" [... {len(text) - RESULT_CHARS} more characters]"
            lines.append(f"tool result{' (error)' if block.is_error else ''}: {text}")
        elif isinstance(block, CompactionBlock) and block.text:
            lines.append(f"summary of what came before: {block.text}")
        elif isinstance(block, ProviderToolCallBlock | ProviderToolResultBlock) and block.text:
            lines.append(f"{role} ({block.name}): {block.text[:RESULT_CHARS]}")
        elif isinstance(block, ImageBlock):
            lines.append(f"{role}: [an image]")
        elif isinstance(block, ThinkingBlock):
            continue  # the model's private reasoning is not carried into the summary
    return "\n".join(lines)


def transcript_chunks(messages: Sequence[Message], max_chars: int) -> Iterator[str]:
    """The transcript in parts of at most about `max_chars` characters, split between messages."""
    part: list[str] = []
    size = 0
    for message in messages:
        text = render(message)
        if not text:
            continue
        if len(text) > max_chars:
            text = text[:max_chars]
        if part and size + len(text) > max_chars:
            yield "\n\n".join(part)
            part, size = [], 0
        part.append(text)
        size += len(text) + 2
    if part:
        yield "\n\n".join(part)
