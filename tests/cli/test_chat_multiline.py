"""Multi-line messages and /save in `metis chat`, on a pseudo-terminal (recorded stream__text_basic.sse).

A paste of three lines is one message (one request, not three paid calls); `\\` at the end of a
line continues it; `!multi … !end` writes a block; `/save` writes the last answer to a file.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .cli_harness import PtySession, cli_env, metis
from .replay_server import ANTHROPIC, ReplayServer, Reply

PROMPT = r"you> "
TEXT = Reply.recording("anthropic", "stream__text_basic.sse")


def last_user_text(server: ReplayServer, index: int) -> str:
    return str(server.bodies(ANTHROPIC)[index]["messages"][-1]["content"])


def test_a_pasted_block_continuations_and_multi_are_one_message_each_and_save_writes_the_answer(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, TEXT, TEXT, TEXT)
    term = PtySession(["chat"], cli_env(home, server.base_url), workspace)
    try:
        term.expect(PROMPT)
        time.sleep(0.2)
        term.press(b"first line\rsecond line\rthird line\r")  # one write: what a paste delivers
        term.expect(r"Hello there!")
        term.expect(PROMPT)
        term.type("one \\")
        term.expect(r"\.\.\. ")
        term.type("two")
        term.expect(r"Hello there!")
        term.expect(PROMPT)
        term.type("!multi")
        term.expect(r"\.\.\. ")
        term.type("alpha")
        term.expect(r"\.\.\. ")
        term.type("beta")
        term.expect(r"\.\.\. ")
        term.type("!end")
        term.expect(r"Hello there!")
        term.expect(PROMPT)
        term.type("/save notes/answer.md")
        assert "saved the last answer (12 characters) to" in term.expect(PROMPT)
        term.type("/save notes/answer.md")
        assert "exists; /save another name" in term.expect(PROMPT)
        term.type("/exit")
        assert term.wait() == 0
    finally:
        term.close()
    assert len(server.bodies(ANTHROPIC)) == 3
    assert last_user_text(server, 0) == "first line\nsecond line\nthird line"
    assert last_user_text(server, 1) == "one \ntwo"
    assert last_user_text(server, 2) == "alpha\nbeta"
    assert (workspace / "notes" / "answer.md").read_text() == "Hello there!\n"


def test_without_a_terminal_each_line_is_a_message_and_multi_still_groups(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, TEXT, TEXT)
    done = metis(["chat"], cli_env(home, server.base_url), workspace, stdin="hello\n!multi\nx\ny\n!end\n")
    assert done.returncode == 0, done.stderr
    assert [last_user_text(server, i) for i in range(2)] == ["hello", "x\ny"]


BRACKETED_PASTE_ON = b"\x1b[?2004h"
"""What readline writes when it reads a line with bracketed paste enabled (xterm's mode 2004)."""


def readline_brackets_pastes() -> bool:
    """GNU readline 8.1 or later (libedit, and older readline, have no bracketed paste)."""
    try:
        import readline
    except ImportError:
        return False
    if "libedit" in (readline.__doc__ or ""):
        return False
    major, _, minor = str(getattr(readline, "_READLINE_LIBRARY_VERSION", "0.0")).partition(".")
    return (int(major), int(minor.split(".")[0] or 0)) >= (8, 1)


@pytest.mark.skipif(not readline_brackets_pastes(), reason="this Python's readline has no bracketed paste")
def test_a_bracketed_paste_is_one_message_sent_only_on_enter(home: Path, server: ReplayServer, workspace: Path) -> None:
    # The terminal wraps a paste in ESC[200~ ... ESC[201~; readline keeps it all in the line being edited,
    # newlines included, so nothing is sent until Enter, well after the paste (no pending-input fallback).
    server.script(ANTHROPIC, TEXT)
    term = PtySession(["chat"], cli_env(home, server.base_url), workspace)
    try:
        term.expect(PROMPT)
        time.sleep(0.2)
        assert BRACKETED_PASTE_ON in term.raw  # on, though CPython turns it off when it loads readline
        term.press(b"\x1b[200~first line\rsecond line\rthird line\x1b[201~")
        time.sleep(0.5)
        assert server.bodies(ANTHROPIC) == []  # still being edited: the pasted line breaks sent nothing
        term.press(b" (edited)\r")
        term.expect(r"Hello there!")
        term.expect(PROMPT)
        term.type("/exit")
        assert term.wait() == 0
    finally:
        term.close()
    assert len(server.bodies(ANTHROPIC)) == 1
    assert last_user_text(server, 0) == "first line\nsecond line\nthird line (edited)"
