"""Rich rendering of what a turn shows live: streamed text, dimmed thinking, tool activity, totals.

`StreamPrinter` is the `on_stream` callback of a turn; `ShownTool` wraps a tool so its result is
printed the moment it finishes. Figures (money, tokens, seconds) are formatted here once. Tables
and the trace tree live in tables.py and trace_view.py; nothing here decides anything.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from rich.console import Console

from metis_core.agent.tools.base import Tool, ToolContext, ToolOutcome, extra_input_violations
from metis_core.agent.tools.registry import ToolRegistry
from metis_core.agent.turn import TurnResult
from metis_core.messages import (
    MessageComplete,
    StreamError,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseEnd,
)

PREVIEW_CHARS = 160


def format_usd(amount: Decimal | float | None) -> str:
    """$0 for nothing, six decimals under a cent, four above; '-' for unpriced."""
    if amount is None:
        return "-"
    value = Decimal(str(amount))
    if value == 0:
        return "$0"
    if abs(value) < Decimal("0.01"):
        return "$" + format(value.quantize(Decimal("0.000001")), "f")
    return "$" + format(value.quantize(Decimal("0.0001")), "f")


def cost_text(amount: Decimal, unpriced_calls: int) -> str:
    """A total that may include unpriced calls: `$0.0012`, `≥ $0.0012, 2 calls unpriced`, or
    `cost unknown (1 call unpriced)`: never `$0` for a call nobody priced."""
    if not unpriced_calls:
        return format_usd(amount)
    calls = f"{unpriced_calls} call{'' if unpriced_calls == 1 else 's'} unpriced"
    return f"cost unknown ({calls})" if amount == 0 else f"≥ {format_usd(amount)}, {calls}"


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class StreamPrinter:
    """Prints a turn's stream as it arrives: text plain, thinking dim, tool calls as one line."""

    def __init__(self, console: Console, *, show_thinking: bool = True) -> None:
        self.console = console
        self.show_thinking = show_thinking
        self.kind: str | None = None
        self.mid_line = False

    def _switch(self, kind: str) -> None:
        if self.kind != kind and self.mid_line:
            self.console.print()
            self.mid_line = False
        self.kind = kind

    def _write(self, text: str, style: str | None = None) -> None:
        self.console.print(text, end="", style=style, markup=False, highlight=False)
        self.mid_line = not text.endswith("\n")

    def __call__(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            self._switch("text")
            self._write(event.text)
        elif isinstance(event, ThinkingDelta) and self.show_thinking:
            self._switch("thinking")
            self._write(event.text, "dim italic")
        elif isinstance(event, ToolUseEnd):
            self._switch("tool")
            self.line(f"→ {event.name} {json.dumps(event.input, ensure_ascii=False)}", "cyan")
        elif isinstance(event, StreamError):
            self._switch("error")
            self.line(f"stream interrupted: {event.message}", "yellow")
        elif isinstance(event, MessageComplete):
            self.finish()

    def line(self, text: str, style: str | None = None) -> None:
        if self.mid_line:
            self.console.print()
        self.console.print(text, style=style, markup=False, highlight=False)
        self.mid_line = False

    def finish(self) -> None:
        if self.mid_line:
            self.console.print()
        self.mid_line = False
        self.kind = None


class ShownTool:
    """A tool that prints its outcome as it finishes; the call itself is the wrapped tool's."""

    def __init__(self, tool: Tool, printer: StreamPrinter) -> None:
        self.tool = tool
        self.definition = tool.definition
        self.printer = printer

    def input_violations(self, tool_input: dict[str, Any]) -> list[str]:
        return extra_input_violations(self.tool, tool_input)

    async def run(self, tool_input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        outcome = await self.tool.run(tool_input, context)
        mark, style = ("✗", "red") if outcome.is_error else ("✓", "green")
        size = len(outcome.content.encode())
        self.printer.line(f"{mark} {self.definition.name}: {size} bytes · {preview(outcome.content)}", style)
        return outcome


def shown_tools(registry: ToolRegistry, printer: StreamPrinter) -> ToolRegistry:
    """The same tools, each printing its result through `printer`."""
    shown = ToolRegistry()
    for name in registry.names():
        tool = registry.get(name)
        assert tool is not None
        shown.register(ShownTool(tool, printer))
    return shown


def turn_summary(result: TurnResult, seconds: float) -> str:
    tokens = f"{result.input_tokens} in / {result.output_tokens} out tokens"
    calls = f"{result.llm_calls} call{'s' if result.llm_calls != 1 else ''}"
    tools = f" · {result.tool_calls} tool call{'s' if result.tool_calls != 1 else ''}" if result.tool_calls else ""
    cost = cost_text(result.cost_usd, result.unpriced_calls)
    return f"{result.model or '?'} · {calls}{tools} · {tokens} · {cost} · {seconds:.1f}s"
