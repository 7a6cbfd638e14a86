"""Reading one chat message, which may span several lines.

A paste of several lines is one message: with readline's bracketed paste (which Python turns off
when it loads readline, and `enable_line_editing` turns back on) the whole paste comes back from one
`input()`, and without it the lines still waiting on the terminal when the first one is read are
taken into the same message. A line ending in `\\` continues on the next line;
`!multi` starts a message that runs until a line `!end`; `!edit` writes the message in $EDITOR.
Without a terminal (a pipe) each line is a message, with the same `\\` and `!multi` rules.
"""

from __future__ import annotations

import select
import sys
from collections.abc import Callable

from metis_core.cli.text_editor import edit_text

MORE = "... "
MULTI, END, EDIT = "!multi", "!end", "!edit"
PASTE_WAIT_SECONDS = 0.02
"""How long a line that was just read may wait for the next one to count as part of a paste."""


def enable_line_editing() -> bool:
    """Load readline for `input()` (editing, history) with bracketed paste on; False without readline.

    Readline 8.1+ brackets a paste (ESC[200~ ... ESC[201~) and keeps it, line breaks included, in the
    line being edited until Enter; CPython switches that off when it loads readline (bpo-42819, for
    its own REPL), so a chat would otherwise see a pasted line break as Enter. libedit ignores it.
    """
    try:
        import readline
    except ImportError:
        return False
    readline.parse_and_bind("set enable-bracketed-paste on")
    return True


def pending_input(fd: int, wait: float = PASTE_WAIT_SECONDS) -> bool:
    """Input is already waiting on `fd` (the rest of a paste), not typed after."""
    try:
        ready, _, _ = select.select([fd], [], [], wait)
    except (OSError, ValueError):
        return False
    return bool(ready)


class MessageReader:
    """`read(prompt)` returns the next message (None at the end of input)."""

    def __init__(self, *, interactive: bool, echo: Callable[[str], None] | None = None) -> None:
        self.interactive = interactive
        self.echo = echo

    def _line(self, prompt: str) -> str | None:
        if self.interactive:
            return input(prompt)
        line = sys.stdin.readline()
        if not line:
            return None
        line = line.rstrip("\n")
        if self.echo is not None:
            self.echo(f"{prompt}{line}")
        return line

    def read(self, prompt: str) -> str | None:
        first = self._line(prompt)
        if first is None:
            return None
        command = first.strip()
        if command == MULTI:
            return self._until_end()
        if command == EDIT or command.startswith(EDIT + " "):
            return edit_text(command[len(EDIT):].strip() + "\n").strip()
        lines = [first]
        while True:
            if lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1]
                following = self._line(MORE)
            elif self.interactive and pending_input(sys.stdin.fileno()):
                following = self._line("")
            else:
                break
            if following is None:
                break
            lines.append(following)
        return "\n".join(lines)

    def _until_end(self) -> str | None:
        lines: list[str] = []
        while True:
            line = self._line(MORE)
            if line is None or line.strip() == END:
                return "\n".join(lines)
            lines.append(line)
