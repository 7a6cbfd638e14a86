"""History repair, run before every request: idempotent, logged, provider-neutral.

Real histories get damaged: a cancelled turn leaves a tool_use with no result, an import brings a
result whose call is gone, an empty text block slips in, a user message lands between a call and
its result. Every provider rejects some of these. `repair_history` returns a history that all our
targets accept, logging each change; running it twice changes nothing more. Stored messages are
never modified — only the list sent on the wire.
"""

from __future__ import annotations

import logging

from metis_core.messages import (
    Message,
    MessageMetadata,
    MessageStatus,
    Role,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.messages.blocks import is_block

log = logging.getLogger("metis_core.adapters.repair")

MISSING_RESULT_TEXT = "error: this tool call was interrupted and produced no result"
_TOOL, _SYSTEM, _COMPLETE = Role.TOOL, Role.SYSTEM, MessageStatus.COMPLETE


def synthetic_result(tool_use: ToolUseBlock, session_id: str) -> Message:
    return Message(
        id=f"repair_{tool_use.id}",
        session_id=session_id,
        role=Role.TOOL,
        content=[
            ToolResultBlock(tool_use_id=tool_use.id, content=[TextBlock(text=MISSING_RESULT_TEXT)], is_error=True)
        ],
        metadata=MessageMetadata(parent_tool_use_id=tool_use.id),
    )


def _without_empty_text(message: Message, session_id: str) -> Message | None:
    kept = [b for b in message.content if not (isinstance(b, TextBlock) and not b.text)]
    if len(kept) == len(message.content):
        return message
    log.info("repair: dropped %d empty text block(s) from message %s",
             len(message.content) - len(kept), message.id, extra={"session_id": session_id})
    if not kept and message.role is not Role.SYSTEM:
        return None
    return message.model_copy(update={"content": kept})


def _needs_no_repair(messages: list[Message]) -> bool:
    """One cheap pass: True when the history is already in the shape `repair_history` produces.

    That is the common case (the agent loop writes well-formed histories), and it lets every
    request skip the rebuilding pass, which is most of the cost of `to_wire`. It runs on every
    request: `isinstance` on the block classes and one index into the calls awaiting results keep
    it at ~0.2 µs a message (string kinds and `del expected[0]` cost half as much again).
    """
    awaiting: list[str] = []  # tool_use ids of the last assistant turn, answered in order
    answered = 0
    seen_uses: set[str] = set()
    for message in messages:
        content = message.content
        role = message.role
        if role is _TOOL:
            if answered == len(awaiting) or len(content) != 1:
                return False
            block = content[0]
            if not is_block(block, ToolResultBlock) or block.tool_use_id != awaiting[answered]:
                return False
            answered += 1
            continue
        if answered != len(awaiting):
            return False  # a call is still unanswered
        if not content and role is not _SYSTEM:
            return False
        for block in content:
            if is_block(block, TextBlock):
                if not block.text:
                    return False
            elif is_block(block, ToolUseBlock):
                use_id = block.id
                if message.metadata.status is not _COMPLETE or use_id in seen_uses:
                    return False
                seen_uses.add(use_id)
                awaiting.append(use_id)
            elif is_block(block, ToolResultBlock):
                return False
    return answered == len(awaiting)


class RepairedHistory(list[Message]):
    """A history its caller has already found in the shape `repair_history` produces.

    The model client finds that out in the same walk as its token estimate (`survey_history`)
    and passes the history on as this type, so the adapter's repair pass does not walk it again."""

    __slots__ = ()


def repair_history(messages: list[Message], *, session_id: str = "") -> list[Message]:
    """A copy of `messages` in which every tool_use is answered right after its assistant turn."""
    if type(messages) is RepairedHistory or _needs_no_repair(messages):
        return list(messages)
    all_uses = {b.id for m in messages for b in m.content if isinstance(b, ToolUseBlock)}
    results: dict[str, Message] = {}
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                if block.tool_use_id not in all_uses:
                    log.warning("repair: dropped tool_result for unknown tool_use %s (message %s)",
                                block.tool_use_id, message.id, extra={"session_id": session_id})
                elif block.tool_use_id in results:
                    log.warning("repair: dropped second tool_result for %s (message %s)",
                                block.tool_use_id, message.id, extra={"session_id": session_id})
                else:
                    results[block.tool_use_id] = message

    repaired: list[Message] = []
    for message in messages:
        if message.role is Role.TOOL:
            continue  # re-placed right after the assistant message that asked for it
        cleaned = _without_empty_text(message, session_id)
        if cleaned is None:
            continue
        if cleaned.role is Role.ASSISTANT:
            uses = cleaned.tool_uses()
            if uses and cleaned.status is not MessageStatus.COMPLETE:
                # A call from an unfinished message was never run: drop the unanswered ones.
                unanswered = {u.id for u in uses if u.id not in results}
                if unanswered:
                    log.warning("repair: dropped %d unexecuted tool_use block(s) from %s message %s",
                                len(unanswered), cleaned.status.value, cleaned.id,
                                extra={"session_id": session_id})
                    content = [b for b in cleaned.content
                               if not (isinstance(b, ToolUseBlock) and b.id in unanswered)]
                    if not content:
                        continue
                    cleaned = cleaned.model_copy(update={"content": content})
                    uses = cleaned.tool_uses()
            repaired.append(cleaned)
            for use in uses:
                answer = results.get(use.id)
                if answer is None:
                    log.warning("repair: tool_use %s (%s) had no result; added an error result",
                                use.id, use.name, extra={"session_id": session_id})
                    answer = synthetic_result(use, session_id)
                repaired.append(answer)
            continue
        repaired.append(cleaned)
    return repaired
