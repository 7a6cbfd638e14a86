"""The chat's question when a routing rule outranked the pattern store's recommendation.

Before the first model call of such a turn the chat shows the suggestion and waits for
`/route override` (send this turn to the suggested model), `/route ignore` (dismiss it) or Enter
(keep the rule's model, no event). No answer within the timeout keeps the rule's model.
"""

from __future__ import annotations

import asyncio

from metis_core.agent.route_advice import RouteAnswer, RouteSuggestion
from metis_core.cli.confirm_prompt import LineReader
from metis_core.cli.output import Terminal

ANSWERS: dict[str, RouteAnswer] = {
    "/route override": "override", "override": "override", "o": "override",
    "/route ignore": "ignore", "ignore": "ignore", "i": "ignore",
}  # fmt: skip


def describe(suggestion: RouteSuggestion) -> str:
    rule = f"rule {suggestion.rule_name!r}" if suggestion.rule_name else "a rule"
    return (f"pattern store suggests {suggestion.suggested_model} for turns like this (confidence "
            f"{suggestion.confidence:.2f}, {suggestion.sample_size} past turns); {rule} chose "
            f"{suggestion.chosen_model}")


class TerminalRouteAdvisor:
    def __init__(self, terminal: Terminal, reader: LineReader, timeout_seconds: float = 120.0) -> None:
        self.terminal = terminal
        self.reader = reader
        self.timeout_seconds = timeout_seconds

    async def __call__(self, suggestion: RouteSuggestion) -> RouteAnswer | None:
        out = self.terminal.out
        out.print(f"\n? {describe(suggestion)}", style="bold yellow", markup=False)
        out.print("  /route override to use it for this turn · /route ignore to dismiss · Enter keeps "
                  f"{suggestion.chosen_model}", markup=False)
        out.print("route> ", end="", markup=False)
        try:
            answer = await asyncio.wait_for(self._read(), self.timeout_seconds)
        except TimeoutError:
            answer = None
        if answer == "override":
            out.print(f"  overridden: {suggestion.suggested_model} answers this turn", style="green", markup=False)
        elif answer == "ignore":
            out.print("  suggestion dismissed", markup=False)
        else:
            out.print(f"  kept {suggestion.chosen_model}", style="dim", markup=False)
        return answer

    async def _read(self) -> RouteAnswer | None:
        while True:
            line = await self.reader.read_line()
            if line is None or not line.strip():
                return None
            found = ANSWERS.get(" ".join(line.strip().lower().split()))
            if found is not None:
                return found
            self.terminal.out.print("  type /route override, /route ignore or Enter: ", end="", markup=False)
