"""The invariants of canonical-message-format §5, as checks that report every violation.

`check_message` runs on each COMPLETE message when it is built; `check_session` runs over a
whole history (tool_use ⇄ tool_result pairing). Both raise one error listing all problems.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from metis_core.errors import MessageInvariantError, SessionInvariantError
from metis_core.messages.blocks import ProviderToolCallBlock, ToolResultBlock, ToolUseBlock

if TYPE_CHECKING:
    from metis_core.messages.message import Message

ALLOWED_BLOCKS: dict[str, frozenset[str]] = {
    "user": frozenset({"text", "image"}),
    "assistant": frozenset(
        {
            "text",
            "tool_use",
            "thinking",
            "redacted_thinking",
            "provider_tool_call",
            "provider_tool_result",
            "compaction",
        }
    ),
    "tool": frozenset({"tool_result"}),
    "system": frozenset({"text"}),
}


def message_violations(message: Message) -> list[str]:
    """Every §5.1/§5.3 rule the message breaks (empty when it is valid)."""
    role: str = message.role._value_  # the member's own value: `.value` is a descriptor call (~1 µs), per message
    found: list[str] = []
    content = message.content
    if role != "system" and not content:
        found.append(f"{role} message has no content blocks")
    allowed = ALLOWED_BLOCKS[role]
    for index, block in enumerate(content):
        kind = block.type  # the tag first: isinstance on a pydantic class runs its metaclass's check in Python
        if kind not in allowed:
            found.append(f"content[{index}]: {kind} block is not allowed in a {role} message")
        if kind == "tool_use" and isinstance(block, ToolUseBlock) and (not block.id or not block.name):
            found.append(f"content[{index}]: tool_use has an empty id or name (id={block.id!r}, name={block.name!r})")
        elif kind == "provider_tool_call" and isinstance(block, ProviderToolCallBlock) and not block.name:
            found.append(f"content[{index}]: provider_tool_call {block.id!r} has no name")
    meta = message.metadata
    if role == "tool":
        if len(content) != 1:
            found.append(f"tool message must hold exactly one tool_result block, has {len(content)}")
        if not meta.parent_tool_use_id:
            found.append("tool message has no metadata.parent_tool_use_id")
        else:
            for block in content:
                if isinstance(block, ToolResultBlock) and block.tool_use_id != meta.parent_tool_use_id:
                    found.append(
                        f"tool_result answers {block.tool_use_id} but parent_tool_use_id is "
                        f"{meta.parent_tool_use_id}"
                    )
    if role == "assistant" and (meta.model is None or meta.provider is None or meta.routing is None
                                or meta.usage is None):  # read directly: no loop of getattr per answer
        for field in ("model", "provider", "routing", "usage"):
            if getattr(meta, field) is None:
                found.append(f"complete assistant message has no metadata.{field}")
    return found


def check_message(message: Message) -> None:
    found = message_violations(message)
    if found:
        raise MessageInvariantError(f"message {message.id} ({message.role.value})", found)


def session_violations(messages: Iterable[Message]) -> list[str]:
    """Pairing rules of §5.2 across a history, plus each COMPLETE message's own rules."""
    found: list[str] = []
    tool_uses: dict[str, str] = {}
    answered: dict[str, str] = {}
    session_ids: set[str] = set()
    for message in messages:
        if message.session_id:
            session_ids.add(message.session_id)
        if message.status.value == "complete":
            found.extend(f"message {message.id}: {v}" for v in message_violations(message))
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                if block.id in tool_uses:
                    found.append(f"tool_use id {block.id} is used twice")
                tool_uses[block.id] = message.id
            elif isinstance(block, ToolResultBlock):
                if block.tool_use_id not in tool_uses:
                    found.append(
                        f"message {message.id}: tool_result answers {block.tool_use_id}, "
                        "which no earlier tool_use in this session issued"
                    )
                elif block.tool_use_id in answered:
                    found.append(
                        f"message {message.id}: tool_use {block.tool_use_id} already answered by "
                        f"message {answered[block.tool_use_id]}"
                    )
                answered.setdefault(block.tool_use_id, message.id)
    if len(session_ids) > 1:
        found.append(f"messages come from {len(session_ids)} sessions: {sorted(session_ids)}")
    return found


def check_session(messages: Iterable[Message]) -> None:
    found = session_violations(messages)
    if found:
        raise SessionInvariantError("session history", found)
