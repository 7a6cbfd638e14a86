"""A fast pre-flight input-token estimate: ~4 characters per token over what a request carries.

Walks the canonical blocks directly (no model_dump), so the capability pre-check that runs before
every call costs a few microseconds per message. Deliberately provider-agnostic and approximate:
it guards the context window, it does not predict the bill (providers report exact usage). The
same walk tells whether the history is already in repaired form, so the client walks it once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import orjson

from metis_core.adapters._common.chars_per_token import CHARS_PER_TOKEN
from metis_core.adapters._common.message_memo import MemoTable
from metis_core.adapters._common.per_tool_cache import PerToolCache
from metis_core.adapters._common.repair import RepairedHistory
from metis_core.messages import (
    ImageBlock,
    Message,
    MessageStatus,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from metis_core.models.fit import HistoryShape

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
    messages: Sequence[Message], tools: Sequence[ToolDefinition]
) -> tuple[int, HistoryShape, bool]:
    """(estimated input tokens, history shape for `check_fits`, already in repaired form), in one pass.

    The third answer is `repair._needs_no_repair`'s, reached in the same walk (the client hands a
    history found in repaired form to the adapter as a `RepairedHistory`, so the adapter's
    `repair_history` does not walk it again); tests hold the two verdicts equal. Each message's part
    is `message_survey`'s, kept per message object: a history re-sent every turn is read once."""
    chars = 0
    images = 0
    tool_calls = False
    system = False
    repaired = True
    awaiting: list[str] = []  # tool_use ids of the last assistant turn, answered in order
    answered = 0
    open_calls = 0  # len(awaiting) - answered, kept as a count
    seen_uses: set[str] = set()
    table = _surveys
    for message in messages:
        survey = table.get(message)
        if survey is None:
            survey = message_survey(message)
            table.put(message, survey)
        message_chars, message_images, calls, result_id, in_form, uses = survey
        chars += message_chars
        images += message_images
        tool_calls = tool_calls or calls
        role = message.role
        if role is _SYSTEM:
            system = True
        if not repaired:
            continue
        if role is _TOOL:
            if not open_calls or result_id is None or result_id != awaiting[answered]:
                repaired = False
            else:
                answered += 1
                open_calls -= 1
        elif open_calls or not in_form:
            repaired = False
        elif uses:
            for use_id in uses:
                if use_id in seen_uses:
                    repaired = False
                seen_uses.add(use_id)
            awaiting.extend(uses)
            open_calls += len(uses)
    for tool in tools:
        chars += _tool_chars(tool)
    tokens = chars // CHARS_PER_TOKEN + images * IMAGE_TOKENS
    return tokens, (images, tool_calls, system), repaired and not open_calls


MessageSurvey = tuple[int, int, bool, str | None, bool, tuple[str, ...]]
"""One message's part of `survey_history`: (characters, images, holds tool calls or results, the call a
TOOL message answers (None unless it holds exactly one tool_result), in repaired form on its own (a
non-TOOL message: not empty unless SYSTEM, no empty text, no tool_result, calls only when COMPLETE, no
id twice), the ids of its calls in order)."""


def message_survey(message: Message) -> MessageSurvey:
    """What `survey_history` needs of one message, mirroring `repair._needs_no_repair` clause by clause."""
    content = message.content
    chars = MESSAGE_OVERHEAD_CHARS + BLOCK_OVERHEAD_CHARS * len(content)
    images = 0
    tool_calls = False
    result_turn = message.role is _TOOL
    result_id = None
    if result_turn and len(content) == 1 and isinstance(content[0], ToolResultBlock):
        result_id = content[0].tool_use_id
    in_form = result_turn or bool(content) or message.role is _SYSTEM
    uses: list[str] = []
    for block in content:
        if type(block) is TextBlock:
            text = block.text
            chars += len(text)
            if not text:
                in_form = False
        elif type(block) is ToolUseBlock:
            tool_calls = True
            chars += len(block.name) + len(orjson.dumps(block.input))
            if message.metadata.status is not _COMPLETE or block.id in uses:
                in_form = False
            uses.append(block.id)
        elif type(block) is ToolResultBlock:
            tool_calls = True
            in_form = in_form and result_turn
            for item in block.content:
                if type(item) is TextBlock or isinstance(item, TextBlock):
                    chars += len(item.text) + BLOCK_OVERHEAD_CHARS
                else:
                    images += 1
        else:
            if isinstance(block, TextBlock | ToolUseBlock | ToolResultBlock):
                in_form = False  # a subclass: the careful check decides
            if isinstance(block, ImageBlock):
                images += 1
            elif isinstance(block, ThinkingBlock):
                chars += len(block.text)
            elif isinstance(block, RedactedThinkingBlock):
                chars += len(block.data)
    return chars, images, tool_calls, result_id, in_form, tuple(uses) if not result_turn else ()


_surveys: Final = MemoTable[MessageSurvey]()


def surveyed_history(
    messages: Sequence[Message], tools: Sequence[ToolDefinition]
) -> tuple[list[Message], int, HistoryShape]:
    """The history to translate, its token estimate and shape, from one walk; the history is a
    `RepairedHistory` when it is already in repaired form (the adapter's repair pass then takes it as it is)."""
    history = list(messages)
    tokens, shape, repaired = survey_history(history, tools)
    return (RepairedHistory(history) if repaired else history), tokens, shape


def _size(tool: ToolDefinition) -> int:
    return len(tool.name) + len(tool.description) + len(orjson.dumps(tool.input_schema))


_tool_chars: Final = PerToolCache(_size)
