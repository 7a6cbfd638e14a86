"""The canonical conversation format: messages, blocks, metadata, tools and stream events.

This package is the centre of metis-core and imports nothing else of ours except ids, hashing,
errors and field_defaults. It knows no provider: adapters translate to and from it.
"""

from metis_core.messages.blocks import (
    BlockOrigin,
    ContentBlock,
    ImageBlock,
    ImageSource,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.messages.invariants import check_message, check_session, session_violations
from metis_core.messages.message import (
    SCHEMA_VERSION,
    Message,
    Role,
    format_timestamp,
    system_message,
    tool_result_message,
    user_message,
    utc_now,
)
from metis_core.messages.metadata import (
    MessageMetadata,
    MessageStatus,
    RoutingDecisionRecord,
    RoutingMode,
    StopReason,
    Usage,
)
from metis_core.messages.stream import (
    MessageComplete,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseEnd,
    ToolUseInputDelta,
    ToolUseStart,
    UsageUpdate,
)
from metis_core.messages.tools import SideEffects, ToolDefinition

__all__ = [
    "SCHEMA_VERSION",
    "BlockOrigin",
    "ContentBlock",
    "ImageBlock",
    "ImageSource",
    "Message",
    "MessageComplete",
    "MessageMetadata",
    "MessageStatus",
    "RedactedThinkingBlock",
    "Role",
    "RoutingDecisionRecord",
    "RoutingMode",
    "SideEffects",
    "StopReason",
    "StreamError",
    "StreamEvent",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolDefinition",
    "ToolResultBlock",
    "ToolUseBlock",
    "ToolUseEnd",
    "ToolUseInputDelta",
    "ToolUseStart",
    "Usage",
    "UsageUpdate",
    "check_message",
    "check_session",
    "format_timestamp",
    "session_violations",
    "system_message",
    "tool_result_message",
    "user_message",
    "utc_now",
]
