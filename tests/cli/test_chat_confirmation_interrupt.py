"""Ctrl-C while `metis chat` waits at a tool confirmation, on a pseudo-terminal.

The turn must close cleanly: the question is resolved on the record (a denial by the user), the
tool call gets its result, the turn ends with turn.cancelled, the stored history is valid (no
tool_use id stored twice) and the next message needs no repair; the audit export has the answer.
Recordings: the tool_use stream turned into a write_file call, then stream__text_basic.sse.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from metis_core.messages import MessageStatus, Role

from .cli_harness import (
    PtySession,
    cli_env,
    first,
    json_lines,
    metis,
    only_session_id,
    stored_events,
    stored_messages,
    types,
    write_file_call_stream,
)
from .replay_server import ANTHROPIC, ReplayServer, Reply

PROMPT = r"you> "


def test_ctrl_c_at_the_confirmation_prompt_closes_the_turn_and_the_chat_goes_on(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "x")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    term = PtySession(["chat", "--confirm-timeout", "120"], cli_env(home, server.base_url), workspace)
    try:
        term.expect(PROMPT)
        term.type("write a note")
        term.expect(r"confirm> ")
        time.sleep(0.2)
        term.press(b"\x03")
        shown = term.expect(r"cancelled: the partial answer is kept and the chat goes on")
        assert "no answer: the tool was not run" in shown
        term.expect(PROMPT)
        term.type("and now just say hello")
        after = term.expect(r"Hello there!")
        assert "error:" not in after and "repair" not in after
        term.expect(PROMPT)
        term.type("/exit")
        assert term.wait() == 0
    finally:
        term.close()
    assert "error:" not in term.text and "already used" not in term.text
    assert not (workspace / "notes.txt").exists()

    session_id = only_session_id(home)
    messages = stored_messages(home, session_id)
    assert [(m.role, m.status) for m in messages] == [
        (Role.USER, MessageStatus.COMPLETE), (Role.ASSISTANT, MessageStatus.COMPLETE),
        (Role.TOOL, MessageStatus.COMPLETE), (Role.USER, MessageStatus.COMPLETE),
        (Role.ASSISTANT, MessageStatus.COMPLETE)]
    call = messages[1].tool_uses()[0]
    ids = [u.id for m in messages for u in m.tool_uses()]
    assert ids == [call.id]
    result = messages[2].tool_results()[0]
    assert result.tool_use_id == call.id and result.is_error
    # The second request carries the call answered by its result: nothing was repaired.
    second = server.bodies(ANTHROPIC)[1]["messages"]
    assert second[2]["content"][0]["type"] == "tool_result"
    assert "no result" not in json.dumps(second)

    events = stored_events(home, session_id)
    assert types(events) == [
        "session.created", "turn.started", "route.decided", "llm.call_started", "llm.call_completed",
        "tool.called", "tool.confirmation_requested", "tool.confirmation_resolved", "tool.failed",
        "turn.cancelled",
        "turn.started", "route.decided", "llm.call_started", "llm.call_completed", "turn.completed",
        "session.ended"]
    resolved = first(events, "tool.confirmation_resolved")
    assert resolved.payload["decision"] == "deny" and resolved.actor == "user"
    assert first(events, "tool.failed").payload["error_class"] == "cancelled"
    assert first(events, "turn.cancelled").payload == {"reason": "user_cancel", "partial_llm_calls": 0,
                                                       "partial_tool_calls": 1}

    audit = metis(["audit", "export"], cli_env(home, None), workspace)
    assert audit.returncode == 0, audit.stderr
    rows = json_lines(audit.stdout)
    assert [(r["type"], r["payload"]["decision"]) for r in rows] == [("tool.confirmation_resolved", "deny")]
