"""The session being replayed, as turns: each user message with what the assistant did after it.

A turn is a user message and every assistant and tool message up to the next user message; its id
comes from the session's turn.started events in order (None when the trace was pruned). `TurnSide`
is the per-turn summary both the original and the replay are reduced to before comparing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from metis_core.messages import Message, Role, StopReason, TextBlock, ToolResultBlock
from metis_core.replay.recorded_options import RecordedRequest


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


@dataclass
class TurnSide:
    """One side of a turn (original or replay): what it did and what it cost."""

    model: str | None
    steps: list[list[ToolCall]]
    """The tool calls of each model call in order; the last call of a finished turn has none."""
    answer: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal | None = Decimal(0)
    """None when some call of the turn could not be priced."""
    latency_ms: int = 0
    structured_valid: bool | None = None
    """Whether the answer parses as JSON, when the original answered in JSON; None when not applicable."""
    error: str | None = None
    refused: bool = False
    """The last model call refused to answer (stop reason `refusal`)."""

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [call for step in self.steps for call in step]

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "tool_calls": [c.to_json() for c in self.tool_calls], "answer": self.answer,
            "model_calls": len(self.steps),
            "tokens": {"input": self.input_tokens, "output": self.output_tokens},
            "cost_usd": format(self.cost_usd, "f") if self.cost_usd is not None else None,
            "latency_ms": self.latency_ms, "structured_valid": self.structured_valid, "error": self.error,
        }


def parses_as_json(text: str) -> bool:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return False
    try:
        json.loads(stripped)
    except ValueError:
        return False
    return True


def side_of(messages: list[Message], error: str | None = None) -> TurnSide:
    """A TurnSide from the assistant messages of one turn (tool messages are skipped)."""
    assistants = [m for m in messages if m.role is Role.ASSISTANT]
    side = TurnSide(
        model=assistants[-1].metadata.model if assistants else None,
        steps=[[ToolCall(u.name, dict(u.input)) for u in m.tool_uses()] for m in assistants],
        answer=assistants[-1].text() if assistants else "", error=error,
        refused=bool(assistants) and assistants[-1].metadata.stop_reason == StopReason.REFUSAL,
    )
    for message in assistants:
        usage = message.metadata.usage
        if usage is None:
            continue
        side.input_tokens += usage.total_input_tokens
        side.output_tokens += usage.output_tokens
        side.latency_ms += usage.latency_ms or 0
        if usage.cost_usd is None or side.cost_usd is None:
            side.cost_usd = None
        else:
            side.cost_usd += usage.cost_usd
    return side


@dataclass
class SourceTurn:
    index: int
    """1-based position among the session's user turns."""
    turn_id: str | None
    user: Message
    messages: list[Message] = field(default_factory=list)
    error: str | None = None
    request: RecordedRequest = field(default_factory=lambda: RecordedRequest.of(None))
    """How its calls were asked (its first llm.call_started's request_options), for the replay to ask again."""

    @property
    def user_text(self) -> str:
        return "".join(b.text for b in self.user.content if isinstance(b, TextBlock))

    @property
    def side(self) -> TurnSide:
        return side_of(self.messages, self.error)


@dataclass
class RecordedToolResult:
    name: str
    arguments: dict[str, Any]
    text: str
    is_error: bool


@dataclass
class SourceSession:
    id: str
    workspace: Path
    model: str | None
    turns: list[SourceTurn]
    preamble: list[Message] = field(default_factory=list)
    """Messages before the first user turn (system prompts): copied into the replay as they are."""

    def tool_results(self) -> list[RecordedToolResult]:
        """Every tool call of the session with the result it got, in order."""
        results: dict[str, ToolResultBlock] = {}
        for turn in self.turns:
            for message in turn.messages:
                for block in message.content:
                    if isinstance(block, ToolResultBlock):
                        results[block.tool_use_id] = block
        recorded: list[RecordedToolResult] = []
        for turn in self.turns:
            for message in turn.messages:
                for use in message.tool_uses():
                    answer = results.get(use.id)
                    if answer is None:
                        continue
                    text = "".join(part.text for part in answer.content if isinstance(part, TextBlock))
                    recorded.append(RecordedToolResult(use.name, dict(use.input), text, answer.is_error))
        return recorded


def split_turns(messages: list[Message], turn_ids: list[str], errors: dict[str, str],
                requests: dict[str, dict[str, Any] | None] | None = None) -> list[SourceTurn]:
    """Group a session's messages into user turns; `turn_ids` are the turn.started ids in order,
    `requests` each turn's recorded request_options (None or absent: not recorded)."""
    turns: list[SourceTurn] = []
    asked = requests or {}
    for message in messages:
        if message.role is Role.USER:
            turn_id = turn_ids[len(turns)] if len(turns) < len(turn_ids) else None
            turns.append(SourceTurn(len(turns) + 1, turn_id, message, error=errors.get(turn_id or ""),
                                    request=RecordedRequest.of(asked.get(turn_id or ""))))
        elif turns and message.role in (Role.ASSISTANT, Role.TOOL):
            turns[-1].messages.append(message)
    return turns
