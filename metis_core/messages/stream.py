"""Canonical stream events (§7.4): what every adapter's `stream_response` yields.

Text and thinking arrive as deltas; tool input arrives as raw JSON fragments
(`tool_use_input_delta`) and whole, parsed, at `tool_use_end`. Blocks that stream no text of their
own (a hosted tool's call or result, a compaction, redacted thinking) arrive whole (`whole_block`)
and a text block's sources as `citation_delta`: two events beyond the spec's list
(docs/canonical-format.md). A stream always ends with exactly one `message_complete` carrying the
final Message (COMPLETE, or PARTIAL/ERROR after an `error` event) so that consumers never have to
assemble the message themselves. Events are plain slotted dataclasses, not pydantic models:
in-process values made by the thousand per stream, needing no validation or serialization.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from metis_core.messages.metadata import Usage


@dataclass(slots=True)
class TextDelta:
    """Text appended to the text block at `index`."""

    index: int
    """Position of the block in the final message's content."""
    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(slots=True)
class ThinkingDelta:
    """Reasoning text appended to the thinking block at `index`."""

    index: int
    text: str
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(slots=True)
class ToolUseStart:
    """A tool call begins at `index`; its input follows as `ToolUseInputDelta` fragments."""

    index: int
    id: str
    """Canonical `tu_<ulid>` id, issued when the provider announced the call."""
    name: str
    provider_fields: dict[str, Any] | None = None
    """Fields the provider put on the call beyond id, name and input (Anthropic's `caller` of a call made
    from its code execution), for a writer that answers in that provider's own shape."""
    type: Literal["tool_use_start"] = "tool_use_start"


@dataclass(slots=True)
class ToolUseInputDelta:
    """A raw JSON fragment of a tool call's input, as the provider sent it."""

    index: int
    id: str
    partial_json: str
    type: Literal["tool_use_input_delta"] = "tool_use_input_delta"


@dataclass(slots=True)
class ToolUseEnd:
    """A tool call is complete; `input` is the whole parsed argument object."""

    index: int
    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_use_end"] = "tool_use_end"


@dataclass(slots=True)
class WholeBlock:
    """A block that streams no deltas of its own is complete at `index`: a hosted tool's call or result,
    a compaction, redacted thinking. `block` is the canonical block the final message holds there."""

    index: int
    block: Any
    """The canonical content block (typed loosely to keep this module import-light)."""
    type: Literal["whole_block"] = "whole_block"


@dataclass(slots=True)
class CitationDelta:
    """A source added to the text block at `index` (Anthropic citations, Responses annotations)."""

    index: int
    citation: Any
    """The canonical `Citation`, as the final message's text block holds it."""
    type: Literal["citation_delta"] = "citation_delta"


@dataclass(slots=True)
class UsageUpdate:
    """Token counts so far (providers report them at the start, the end, or both)."""

    usage: Usage
    type: Literal["usage_update"] = "usage_update"


@dataclass(slots=True)
class StreamError:
    """The stream failed; a `MessageComplete` with the partial message still follows."""

    error_class: str
    message: str
    retryable: bool = False
    type: Literal["error"] = "error"


@dataclass(slots=True)
class MessageComplete:
    """The last event of every stream, carrying the final message."""

    message: Any
    """The final canonical `Message` (typed loosely to keep this module import-light)."""
    stop_reason: str | None = None
    type: Literal["message_complete"] = "message_complete"


StreamEvent = (
    TextDelta
    | ThinkingDelta
    | ToolUseStart
    | ToolUseInputDelta
    | ToolUseEnd
    | WholeBlock
    | CitationDelta
    | UsageUpdate
    | StreamError
    | MessageComplete
)

BLOCK_EVENTS = (TextDelta, ThinkingDelta, ToolUseStart, ToolUseInputDelta, ToolUseEnd, WholeBlock, CitationDelta)
"""The events about one content block at their `index` (content, as opposed to usage, errors and the end)."""

