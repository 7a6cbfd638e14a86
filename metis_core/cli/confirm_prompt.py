"""Tool confirmations asked inline on the terminal: allow once, allow for the session, or deny.

The question names the tool, its side effects and what it would touch, and says when it will be
denied by itself (the policy's timeout). Answers are read from stdin without blocking the event
loop, so Ctrl-C and the timeout both cancel the question cleanly. Without a terminal nothing is
asked: scripts get `NoTerminalDenier` (a policy denial with a note on stderr) or `--yes` instead.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime

from metis_core.agent.confirmation import ConfirmationAnswer, ConfirmationRequest, deny_all
from metis_core.cli.output import Terminal

ANSWERS = {
    "y": ConfirmationAnswer("allow", "once"), "yes": ConfirmationAnswer("allow", "once"),
    "o": ConfirmationAnswer("allow", "once"), "once": ConfirmationAnswer("allow", "once"),
    "a": ConfirmationAnswer("allow", "session"), "always": ConfirmationAnswer("allow", "session"),
    "s": ConfirmationAnswer("allow", "session"), "session": ConfirmationAnswer("allow", "session"),
    "n": ConfirmationAnswer("deny"), "no": ConfirmationAnswer("deny"), "d": ConfirmationAnswer("deny"),
    "deny": ConfirmationAnswer("deny"),
}  # fmt: skip
VERBS = {"write": "write files", "execute": "run a command", "network": "reach the network"}


class LineReader:
    """Whole lines from a file descriptor, awaited on the event loop (no thread left blocked)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    async def read_line(self) -> str | None:
        """The next line without its newline; None at end of input."""
        loop = asyncio.get_running_loop()
        while b"\n" not in self.buffer:
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(self.fd, _resolve, readable)
            try:
                await readable
            finally:
                loop.remove_reader(self.fd)
            chunk = os.read(self.fd, 4096)
            if not chunk:
                rest, self.buffer = self.buffer, b""
                return rest.decode(errors="replace") if rest else None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode(errors="replace").rstrip("\r")


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class TerminalConfirmer:
    """A Confirmer that asks on the terminal and waits for a typed answer."""

    def __init__(self, terminal: Terminal, reader: LineReader) -> None:
        self.terminal = terminal
        self.reader = reader

    def _ask(self, request: ConfirmationRequest) -> None:
        out = self.terminal.out
        seconds = max(0, int((request.expires_at - datetime.now(UTC)).total_seconds()))
        verb = VERBS.get(request.side_effects, request.side_effects)
        out.print(f"\n? {request.tool_name} wants to {verb}", style="bold yellow", markup=False)
        if request.command_summary:
            out.print(f"  command: {request.command_summary}", markup=False)
        for path in request.projected_modifications or []:
            out.print(f"  writes: {path}", markup=False)
        out.print(f"  input: {request.input_summary}", style="dim", markup=False)
        if request.note:
            out.print(f"  note: {request.note}", style="dim", markup=False)
        out.print(f"  allow once [y] · allow for this session [a] · deny [n]  (denied automatically in {seconds}s)",
                  markup=False)
        out.print("confirm> ", end="", markup=False)

    async def __call__(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        self._ask(request)
        try:
            while True:
                line = await self.reader.read_line()
                if line is None:
                    answer = ConfirmationAnswer("deny")
                    break
                found = ANSWERS.get(line.strip().lower())
                if found is not None:
                    answer = found
                    break
                self.terminal.out.print("  type y, a or n: ", end="", markup=False)
        except asyncio.CancelledError:
            self.terminal.out.print("\n  no answer: the tool was not run", style="yellow", markup=False)
            raise
        outcome = "denied" if answer.decision == "deny" else (
            "allowed for this session" if answer.scope == "session" else "allowed once")
        self.terminal.out.print(f"  {outcome}", style="red" if answer.decision == "deny" else "green", markup=False)
        return answer


class NoTerminalDenier:
    """Without a terminal: deny as a policy (recorded with the system actor) and say so on stderr."""

    def __init__(self, terminal: Terminal) -> None:
        self.terminal = terminal

    async def __call__(self, request: ConfirmationRequest) -> ConfirmationAnswer:
        answer = await deny_all(request)
        self.terminal.warn(f"note: {request.tool_name} was not run: {answer.reason}")
        return answer
