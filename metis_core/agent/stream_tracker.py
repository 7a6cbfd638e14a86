"""Keeps what a stream has delivered so far, so a cancelled or broken response can still be saved.

The assembler inside the adapter owns the final message; when the user cancels, or something
fails before it arrives, that message never comes, so the loop rebuilds the visible part (text,
thinking, finished tool calls, whole hosted blocks) from the events it has already shown and stores
it with status CANCELLED or PARTIAL.
"""

from __future__ import annotations

from typing import Any

from metis_core.messages import (
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    ToolUseEnd,
    WholeBlock,
)


class StreamTracker:
    def __init__(self) -> None:
        self._blocks: dict[int, list[Any]] = {}

    def observe(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            self._blocks.setdefault(event.index, ["text", []])[1].append(event.text)
        elif isinstance(event, ThinkingDelta):
            self._blocks.setdefault(event.index, ["thinking", []])[1].append(event.text)
        elif isinstance(event, ToolUseEnd):
            self._blocks[event.index] = ["tool_use", ToolUseBlock(id=event.id, name=event.name, input=event.input)]
        elif isinstance(event, WholeBlock):  # a hosted call or result, redacted thinking: kept as it came
            self._blocks[event.index] = ["whole", event.block]

    def has_content(self) -> bool:
        return bool(self._blocks)

    def cancelled_message(self, session_id: str, model: str) -> Message:
        return self.partial_message(session_id, model, MessageStatus.CANCELLED, "cancelled")

    def partial_message(self, session_id: str, model: str, status: MessageStatus, stop_reason: str) -> Message:
        content: list[Any] = []
        for index in sorted(self._blocks):
            kind, value = self._blocks[index]
            if kind == "text":
                content.append(TextBlock(text="".join(value)))
            elif kind == "thinking":
                content.append(ThinkingBlock(text="".join(value)))  # unsigned: never replayed as signed
            else:
                content.append(value)
        return Message(
            role=Role.ASSISTANT, session_id=session_id, content=content,
            metadata=MessageMetadata(model=model or None, provider=model.partition(":")[0] or None,
                                     status=status, stop_reason=stop_reason),
        )
