"""What a tool is: a ToolDefinition plus an async `run(input, context) -> ToolOutcome`.

Tools never raise for expected failures (missing file, escape attempt, timeout): they return an
outcome with `is_error` and the `tool.failed` error class, which the loop feeds back to the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from metis_core.messages import ImageBlock, TextBlock, ToolDefinition

if TYPE_CHECKING:
    from metis_core.agent.recording import TurnRecorder
    from metis_core.agent.session import Session
    from metis_core.events.envelope import Event

MAX_OUTPUT_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class ToolCallScope:
    """Where one call happens: its tool_use id, the turn's recorder and the event that caused it.

    Tools that emit their own events (delegate, memory, skill_load, skill_search) parent them to
    `caused_by`, the llm.call_completed whose response asked for the call.
    """

    tool_use_id: str
    recorder: TurnRecorder
    caused_by: Event | None


@dataclass(slots=True)
class ToolContext:
    workspace: Path
    session_id: str = ""
    command_timeout_seconds: float = 30.0
    max_output_bytes: int = MAX_OUTPUT_BYTES
    session: Session | None = None
    """The calling session, for tools that act on it (delegate, skills); None outside a session."""
    call: ToolCallScope | None = None
    """Set by the dispatcher for each call."""


@dataclass(slots=True)
class ToolOutcome:
    content: str
    is_error: bool = False
    error_class: str | None = None
    """For tool.failed: timeout | permission_denied | not_found | validation_error |
    execution_error | cancelled | user_denied | confirmation_timeout."""
    files_modified: list[str] | None = None
    command_executed: str | None = None
    blocks: list[TextBlock | ImageBlock] | None = None
    """The result's blocks when it is more than text (images); `content` then summarises them."""

    @classmethod
    def failure(cls, error_class: str, message: str, **extra: Any) -> ToolOutcome:
        return cls(content=f"error: {message}", is_error=True, error_class=error_class, **extra)


class Tool(Protocol):
    definition: ToolDefinition

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome: ...


def extra_input_violations(tool: Tool, tool_input: dict[str, Any]) -> list[str]:
    """Violations a tool finds beyond its JSON Schema (an optional `input_violations` method), e.g.
    the pydantic validation of a Python tool, whose types can say more than the portable subset."""
    check = getattr(tool, "input_violations", None)
    return list(check(tool_input)) if check is not None else []


def cap_output(text: str, limit: int) -> str:
    """Keep the head of an oversized output and say how much was cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    return f"{kept}\n[output truncated: {len(data) - limit} of {len(data)} bytes not shown]"
