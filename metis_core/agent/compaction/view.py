"""What a request carries once a long conversation is compacted: a view over the stored history.

The store keeps every message. A stored compaction message (an assistant message holding a
`CompactionBlock` whose payload names the last message it summarises) stands in for everything up
to that message; pinned user messages and the turns after it are sent verbatim. Old tool results
can be cut short in the view (no model call). A provider's own compaction block starts the view at
its turn: the provider drops what came before it, and another target reads its summary text.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from metis_core.adapters._common.token_estimate import estimate_tokens
from metis_core.messages import CompactionBlock, Message, Role, TextBlock, ToolDefinition, ToolResultBlock

SUMMARY_API = "metis-summary"
"""`BlockOrigin.api` of a portable summary: no adapter replays it as a payload, every one reads its text."""
SUMMARY_HEADER = "[Summary of the earlier conversation]"
PINNED_HEADER = "[Pinned earlier messages, verbatim]"


def summary_block(message: Message) -> CompactionBlock | None:
    """The portable summary a stored compaction message holds (None for any other message)."""
    if message.role is not Role.ASSISTANT:
        return None
    for block in message.content:
        if isinstance(block, CompactionBlock) and block.origin.api == SUMMARY_API:
            return block
    return None


def is_provider_compaction(message: Message) -> bool:
    return message.role is Role.ASSISTANT and any(
        isinstance(b, CompactionBlock) and b.origin.api != SUMMARY_API for b in message.content)


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """Indices of the user messages that open turns."""
    return [i for i, m in enumerate(messages) if m.role is Role.USER]


@dataclass(frozen=True, slots=True)
class Baseline:
    """The stored history seen through its latest compaction: summary, pins and the live messages."""

    summary: CompactionBlock | None
    summary_message_id: str | None
    pinned: list[Message]
    live: list[Message]
    """Messages after the latest summary (compaction messages left out); the last turn is the current one."""


def baseline(history: Sequence[Message], pinned_ids: Collection[str], pin_first_user: bool) -> Baseline:
    """The history after its latest summary, and the pinned user messages the summary covers."""
    summary: CompactionBlock | None = None
    summary_id: str | None = None
    cut = 0
    for index in range(len(history) - 1, -1, -1):
        found = summary_block(history[index])
        if found is None:
            if is_provider_compaction(history[index]):
                starts = [i for i in turn_starts(history) if i <= index]
                cut = starts[-1] if starts else 0
                break
            continue
        through = found.payload.get("through_message_id")
        position = next((i for i, m in enumerate(history) if m.id == through), None)
        if position is not None:
            summary, summary_id, cut = found, history[index].id, position + 1
        break
    covered = history[:cut]
    first_user = next((m.id for m in history if m.role is Role.USER), None)
    pinned = [m for m in covered if m.role is Role.USER
              and (m.id in pinned_ids or (pin_first_user and m.id == first_user))] if summary is not None else []
    live = [m for m in history[cut:] if summary_block(m) is None]
    return Baseline(summary, summary_id, pinned, live)


def trim_tool_results(messages: Sequence[Message], keep_chars: int, before: int) -> tuple[list[Message], int]:
    """Copies of `messages` whose tool results before index `before` keep at most `keep_chars` characters."""
    trimmed = 0
    out: list[Message] = []
    for index, message in enumerate(messages):
        if index >= before or message.role is not Role.TOOL:
            out.append(message)
            continue
        blocks = []
        changed = False
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                text = block.text()
                if len(text) > keep_chars or len(block.content) != sum(isinstance(b, TextBlock) for b in block.content):
                    note = (f"{text[:keep_chars]}\n[tool result trimmed to keep the context small: "
                            f"{max(len(text) - keep_chars, 0)} more characters are in the session store]")
                    block = block.model_copy(update={"content": [TextBlock(text=note)]})
                    changed = True
            blocks.append(block)
        if changed:
            trimmed += 1
            out.append(message.model_copy(update={"content": blocks}))
        else:
            out.append(message)
    return out, trimmed


def kept_tail_start(live: Sequence[Message], keep_turns: int) -> int:
    """Index in `live` of the first message of the last `keep_turns` turns (the current turn always)."""
    starts = turn_starts(live)
    if not starts:
        return 0
    keep = max(keep_turns, 1)
    return starts[-keep] if len(starts) >= keep else starts[0]


def assemble(base: Baseline, live: Sequence[Message]) -> list[Message]:
    """The messages sent: the summary and pins folded into the first live user message, then the rest."""
    if base.summary is None and not base.pinned:
        return list(live)
    lead: list[TextBlock] = []
    if base.summary is not None:
        lead.append(TextBlock(text=f"{SUMMARY_HEADER}\n{base.summary.text}"))
    pinned_blocks = [b for m in base.pinned for b in m.content]
    if pinned_blocks:
        lead.append(TextBlock(text=PINNED_HEADER))
    head = [*lead, *pinned_blocks]
    if live and live[0].role is Role.USER:
        first = live[0]
        return [first.model_copy(update={"content": [*head, TextBlock(text="[The conversation goes on]"),
                                                     *first.content]}), *live[1:]]
    session_id = live[0].session_id if live else ""
    return [Message(role=Role.USER, session_id=session_id, content=head), *live]


def view_tokens(system: Sequence[Message], messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> int:
    return estimate_tokens([*system, *messages], tools)
