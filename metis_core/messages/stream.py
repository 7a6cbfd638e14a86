"""Canonical stream events (§7.4): what every adapter's `stream_response` yields.

Text and thinking arrive as deltas; tool input arrives as raw JSON fragments
(`tool_use_input_delta`) and whole, parsed, at `tool_use_end`. A stream always ends with
exactly one `message_complete` carrying the final Message (COMPLETE, or PARTIAL/ERROR after an
`error` event) so that consumers never have to assemble the message themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field

from metis_core.messages.metadata import Usage

if TYPE_CHECKING:
    pass


class _Event(BaseModel):
    pass


class TextDelta(_Event):
    type: Literal["text_delta"] = "text_delta"
    index: int
    """Position of the block in the final message's content."""
    text: str


class ThinkingDelta(_Event):
    type: Literal["thinking_delta"] = "thinking_delta"
    index: int
    text: str


class ToolUseStart(_Event):
    type: Literal["tool_use_start"] = "tool_use_start"
    index: int
    id: str
    """Canonical `tu_<ulid>` id, issued when the provider announced the call."""
    name: str


class ToolUseInputDelta(_Event):
    type: Literal["tool_use_input_delta"] = "tool_use_input_delta"
    index: int
    id: str
    partial_json: str


class ToolUseEnd(_Event):
    type: Literal["tool_use_end"] = "tool_use_end"
    index: int
    id: str
    name: str
    input: dict[str, Any]


class UsageUpdate(_Event):
    type: Literal["usage_update"] = "usage_update"
    usage: Usage


class StreamError(_Event):
    type: Literal["error"] = "error"
    error_class: str
    message: str
    retryable: bool = False


class MessageComplete(_Event):
    type: Literal["message_complete"] = "message_complete"
    message: Any
    """The final canonical `Message` (typed loosely to keep this module import-light)."""
    stop_reason: str | None = None


StreamEvent = Annotated[
    TextDelta
    | ThinkingDelta
    | ToolUseStart
    | ToolUseInputDelta
    | ToolUseEnd
    | UsageUpdate
    | StreamError
    | MessageComplete,
    Field(discriminator="type"),
]
