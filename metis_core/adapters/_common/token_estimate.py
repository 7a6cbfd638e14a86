"""A fast pre-flight input-token estimate: ~4 characters per token over what a request carries.

Walks the canonical blocks directly (no model_dump), so the capability pre-check that runs before
every call costs a few microseconds per message. Deliberately provider-agnostic and approximate:
it guards the context window, it does not predict the bill (providers report exact usage). The
same walk tells whether the history is already in repaired form, so the client walks it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import orjson

from metis_core.adapters._common.chars_per_token import CHARS_PER_TOKEN
from metis_core.adapters._common.history_memo import HistoryMemo, first_sight, keep, recall
from metis_core.adapters._common.repair import RepairedHistory
from metis_core.messages import (
    ImageBlock,
    Message,
    MessageStatus,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.models.fit import HistoryShape

if TYPE_CHECKING:
    from metis_core.messages import ToolDefinition

_SYSTEM: Final = Role.SYSTEM
_TOOL: Final = Role.TOOL
_COMPLETE: Final = MessageStatus.COMPLETE
IMAGE_TOKENS: Final = 1_600
"""A typical image at the providers' default resolution (Anthropic: ~1.15 MP -> ~1,600 tokens)."""
BLOCK_OVERHEAD_CHARS: Final = 20
MESSAGE_OVERHEAD_CHARS: Final = 8


def estimate_tokens(messages: Sequence[Message], tools: Sequence[ToolDefinition]) -> int:
    return survey_history(messages, tools)[0]


def survey_history(
    messages: Sequence[Message], tools: Sequence[ToolDefinition], checked_as: object = None
) -> tuple[int, HistoryShape, bool]:
    """(estimated input tokens, history shape for `check_fits`, already in repaired form), in one pass.

    The third answer is `repair._needs_no_repair`'s, reached in the same walk over the blocks (the
    client hands a history found in repaired form to the adapter as a `RepairedHistory`, so the
    adapter's `repair_history` does not walk it again); tests hold the two verdicts equal. A history
    sent again resumes from the sums kept at the end of its last survey (history_memo.py); `checked_as` is the
    list the request's mapping will get, which takes this survey's check of the messages as it is."""
    history = messages if type(messages) is list or type(messages) is RepairedHistory else list(messages)
    resumed = recall(_surveys, history, checked_as, record=True)
    awaiting: list[str]
    seen_uses: set[str]
    if resumed is None:
        start = 0
        chars = blocks = images = answered = open_calls = 0
        tool_calls = system = False
        repaired = True  # what follows mirrors _needs_no_repair, clause by clause
        awaiting, seen_uses = [], set()
    else:
        start, held = resumed
        chars, blocks, images, tool_calls, system, repaired, answered, open_calls = held[0]
        awaiting, seen_uses = list(held[1]), set(held[2])
    chars += MESSAGE_OVERHEAD_CHARS * (len(history) - start)
    for message in history[start:] if start else history:
        role = message.role
        content = message.content
        blocks += len(content)
        result_turn = role is _TOOL
        if role is _SYSTEM:
            system = True
        if not repaired:
            pass
        elif result_turn:
            if not open_calls or len(content) != 1:
                repaired = False
            else:
                block = content[0]
                if not isinstance(block, ToolResultBlock) or block.tool_use_id != awaiting[answered]:
                    repaired = False
                else:
                    answered += 1
                    open_calls -= 1
        elif open_calls or (not content and role is not _SYSTEM):
            repaired = False
        check = repaired and not result_turn
        for block in content:
            if type(block) is TextBlock:
                text = block.text
                chars += len(text)
                if check and not text:
                    repaired = check = False
            elif type(block) is ToolUseBlock:
                tool_calls = True
                chars += len(block.name) + len(orjson.dumps(block.input))
                if check:
                    use_id = block.id
                    if message.metadata.status is not _COMPLETE or use_id in seen_uses:
                        repaired = check = False
                    else:
                        seen_uses.add(use_id)
                        awaiting.append(use_id)
                        open_calls += 1
            elif type(block) is ToolResultBlock:
                tool_calls = True
                repaired = repaired and not check
                check = False
                for item in block.content:
                    if type(item) is TextBlock or isinstance(item, TextBlock):
                        chars += len(item.text) + BLOCK_OVERHEAD_CHARS
                    else:
                        images += 1
            else:
                if check and isinstance(block, TextBlock | ToolUseBlock | ToolResultBlock):
                    repaired = check = False  # a subclass: the careful check decides
                if isinstance(block, ImageBlock):
                    images += 1
                elif isinstance(block, ThinkingBlock):
                    chars += len(block.text)
                elif isinstance(block, RedactedThinkingBlock):
                    chars += len(block.data)
    if start != len(history) and (start or not first_sight(_surveys, history)):
        state = (chars, blocks, images, tool_calls, system, repaired, answered, open_calls)
        keep(_surveys, history, (state, tuple(awaiting), frozenset(seen_uses)), start, checked_as, record=True)
    chars += BLOCK_OVERHEAD_CHARS * blocks
    for tool in tools:
        chars += _tool_chars(tool)
    tokens = chars // CHARS_PER_TOKEN + images * IMAGE_TOKENS
    return tokens, (images, tool_calls, system), repaired and not open_calls


def surveyed_history(
    messages: Sequence[Message], tools: Sequence[ToolDefinition]
) -> tuple[list[Message], int, HistoryShape]:
    """The history to translate, its token estimate and shape, from one walk; the history is a
    `RepairedHistory` when it is already in repaired form (the adapter's repair pass then takes it as it is).
    That list carries the survey's check of the messages to the mapping: hand it on before anything changes
    inside them."""
    history = RepairedHistory(messages)
    tokens, shape, repaired = survey_history(history, tools, checked_as=history)
    return (history if repaired else list(history)), tokens, shape


_SurveyState = tuple[tuple[int, int, int, bool, bool, bool, int, int], tuple[str, ...], frozenset[str]]
"""The sums and the repair check's state at the end of a surveyed history."""
_surveys: Final = HistoryMemo[_SurveyState](read_metadata=("status",)).table("survey")
"""The survey reads one metadata field (`status`, in the repair check): a change to another leaves its sums."""


def _tool_chars(tool: ToolDefinition) -> int:
    """A tool's size, afresh each time: one encoding costs less than checking a kept size against a copy."""
    return len(tool.name) + len(tool.description) + len(orjson.dumps(tool.input_schema))
