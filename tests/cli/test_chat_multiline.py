"""Multi-line messages and /save in `metis chat`, on a pseudo-terminal (recorded stream__text_basic.sse).

A paste of three lines is one message (one request, not three paid calls); `\\` at the end of a
line continues it; `!multi … !end` writes a block; `/save` writes the last answer to a file.
"""

from __future__ import annotations

import time
from pathlib import Path

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
