"""The canonical conversation format: messages, blocks, metadata, tools and stream events.

This package is the centre of metis-core and imports nothing else of ours except ids, hashing,
errors and field_defaults. It knows no provider: adapters translate to and from it. Its names load
on first use, so a module that needs none of the models (messages/call_spend.py's rule read from
stored rows) imports no pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from metis_core.messages.blocks import (
        HOSTED_BLOCK_TYPES,
        BlockOrigin,
        Citation,
        CompactionBlock,
        ContentBlock,
        ImageBlock,
        ImageSource,
        ProviderToolCallBlock,
        ProviderToolResultBlock,
        RedactedThinkingBlock,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
    )
    from metis_core.messages.invariants import check_message, check_session, session_violations
    from metis_core.messages.message import (
        Message,
        Role,
        format_timestamp,
        system_message,
        tool_result_message,
        user_message,
        utc_now,
    )
    from metis_core.messages.metadata import (
        ExtraCallUsage,
        MessageMetadata,
        MessageStatus,
        RoutingDecisionRecord,
        RoutingMode,
        Usage,
        UsageDetails,
    )
    from metis_core.messages.schema_version import SCHEMA_VERSION
    from metis_core.messages.stop_reason import StopReason
    from metis_core.messages.stream import (
        BLOCK_EVENTS,
        CitationDelta,
        MessageComplete,
        StreamError,
        StreamEvent,
        TextDelta,
        ThinkingDelta,
        ToolUseEnd,
        ToolUseInputDelta,
        ToolUseStart,
        UsageUpdate,
        WholeBlock,
    )
    from metis_core.messages.tools import SideEffects, ToolDefinition

_EXPORTS: dict[str, str] = {
    "HOSTED_BLOCK_TYPES": "metis_core.messages.blocks",
    "BlockOrigin": "metis_core.messages.blocks",
    "Citation": "metis_core.messages.blocks",
    "CompactionBlock": "metis_core.messages.blocks",
    "ContentBlock": "metis_core.messages.blocks",
    "ImageBlock": "metis_core.messages.blocks",
    "ImageSource": "metis_core.messages.blocks",
    "ProviderToolCallBlock": "metis_core.messages.blocks",
    "ProviderToolResultBlock": "metis_core.messages.blocks",
    "RedactedThinkingBlock": "metis_core.messages.blocks",
    "TextBlock": "metis_core.messages.blocks",
    "ThinkingBlock": "metis_core.messages.blocks",
    "ToolResultBlock": "metis_core.messages.blocks",
    "ToolUseBlock": "metis_core.messages.blocks",
    "check_message": "metis_core.messages.invariants",
    "check_session": "metis_core.messages.invariants",
    "session_violations": "metis_core.messages.invariants",
    "SCHEMA_VERSION": "metis_core.messages.schema_version",
    "Message": "metis_core.messages.message",
    "Role": "metis_core.messages.message",
    "format_timestamp": "metis_core.messages.message",
    "system_message": "metis_core.messages.message",
    "tool_result_message": "metis_core.messages.message",
    "user_message": "metis_core.messages.message",
    "utc_now": "metis_core.messages.message",
    "ExtraCallUsage": "metis_core.messages.metadata",
    "MessageMetadata": "metis_core.messages.metadata",
    "MessageStatus": "metis_core.messages.metadata",
    "RoutingDecisionRecord": "metis_core.messages.metadata",
    "RoutingMode": "metis_core.messages.metadata",
    "StopReason": "metis_core.messages.stop_reason",
    "Usage": "metis_core.messages.metadata",
    "UsageDetails": "metis_core.messages.metadata",
    "BLOCK_EVENTS": "metis_core.messages.stream",
    "CitationDelta": "metis_core.messages.stream",
    "MessageComplete": "metis_core.messages.stream",
    "StreamError": "metis_core.messages.stream",
    "StreamEvent": "metis_core.messages.stream",
    "TextDelta": "metis_core.messages.stream",
    "ThinkingDelta": "metis_core.messages.stream",
    "ToolUseEnd": "metis_core.messages.stream",
    "ToolUseInputDelta": "metis_core.messages.stream",
    "ToolUseStart": "metis_core.messages.stream",
    "UsageUpdate": "metis_core.messages.stream",
    "WholeBlock": "metis_core.messages.stream",
    "SideEffects": "metis_core.messages.tools",
    "ToolDefinition": "metis_core.messages.tools",
}
"""Public name -> the module that defines it."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value

__all__ = [
    "BLOCK_EVENTS",
    "HOSTED_BLOCK_TYPES",
    "SCHEMA_VERSION",
    "BlockOrigin",
    "Citation",
    "CitationDelta",
    "CompactionBlock",
    "ContentBlock",
    "ExtraCallUsage",
    "ImageBlock",
    "ImageSource",
    "Message",
    "MessageComplete",
    "MessageMetadata",
    "MessageStatus",
    "ProviderToolCallBlock",
    "ProviderToolResultBlock",
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
    "UsageDetails",
    "UsageUpdate",
    "WholeBlock",
    "check_message",
    "check_session",
    "format_timestamp",
    "session_violations",
    "system_message",
    "tool_result_message",
    "user_message",
    "utc_now",
]
