"""`metis chat` on a pseudo-terminal against recorded provider traffic served on 127.0.0.1.

The recordings are the shared fixtures (Anthropic stream__tool_use_input_json_delta.sse and
stream__text_basic.sse, OpenAI stream__text_with_usage_chunk.sse). No recording calls a built-in
tool, so the tool turn uses the recorded tool_use stream with its tool name and input fragments
replaced by a write_file call (see cli_harness.write_file_call_stream); everything else is
replayed byte for byte. Each test checks what the terminal showed, the persisted messages and the
exact event chain in the trace.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from metis_core.messages import ImageBlock, MessageStatus, Role
from metis_core.store.sessions import SessionStore

from .cli_harness import (
    PtySession,
    cli_env,
    first,
    metis,
    only_session_id,
    stored_events,
    stored_messages,
    types,
    write_file_call_stream,
)
from .replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply

RECORDED_TOOL_ID = "toolu_01NRLabsLyVHZPKxbKvkfSMn"
PROMPT = r"you> "
TOOL_TURN = ["turn.started", "route.decided", "llm.call_started", "llm.call_completed", "tool.called",
             "tool.confirmation_requested", "tool.confirmation_resolved", "tool.completed", "llm.call_started",
             "llm.call_completed", "turn.completed"]
TEXT_TURN = ["turn.started", "route.decided", "llm.call_started", "llm.call_completed", "turn.completed"]
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8"
                    "ffff3f0005fe02fea7d605d10000000049454e44ae426082")


def chat(home: Path, server: ReplayServer, workspace: Path, *args: str) -> PtySession:
    return PtySession(["chat", *args], cli_env(home, server.base_url), workspace)


def test_tool_call_is_confirmed_in_the_terminal_then_the_swap_carries_the_history_to_openai(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "Sunny in Paris")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    term = chat(home, server, workspace, "--confirm-timeout", "120")
    try:
        term.expect(PROMPT)
        term.type("Write the weather in Paris to notes.txt")
        asked = term.expect(r"confirm> ")
        assert "write_file wants to write files" in asked and "writes: notes.txt" in asked
        assert re.search(r"allow once \[y\] · allow for this session \[a\] · deny \[n\]  "
                         r"\(denied automatically in 1[12]\ds\)", asked)
        term.type("y")
        shown = term.expect(r"Hello there!")
        assert "allowed once" in shown and "✓ write_file: 27 bytes · wrote 14 bytes to notes.txt" in shown
        term.expect(PROMPT)
        term.type("/model openai:gpt-4o")
        assert "model: openai:gpt-4o · 4 messages carried over" in term.expect(PROMPT)
        term.type("thanks, and summarize")
        term.expect(r"I'm unable to provide real-time weather")
        term.expect(PROMPT)
        term.type("/exit")
        assert term.wait() == 0
    finally:
        term.close()
    assert (workspace / "notes.txt").read_text() == "Sunny in Paris"

    session_id = only_session_id(home)
    messages = stored_messages(home, session_id)
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.USER,
                                          Role.ASSISTANT]
    call = messages[1].tool_uses()[0]
    assert (call.name, call.input) == ("write_file", {"path": "notes.txt", "content": "Sunny in Paris"})
    assert messages[2].tool_results()[0].tool_use_id == call.id
    assert messages[3].text() == "Hello there!" and messages[3].metadata.provider == "anthropic"
    assert messages[5].metadata.provider == "openai" and messages[5].metadata.usage.output_tokens == 30  # type: ignore[union-attr]

    events = stored_events(home, session_id)
    assert types(events) == ["session.created", *TOOL_TURN, *TEXT_TURN, "session.ended"]
    resolved = first(events, "tool.confirmation_resolved")
    assert resolved.payload["decision"] == "allow" and resolved.payload["scope"] == "once"
    assert resolved.parent_event_id == first(events, "tool.confirmation_requested").id
    assert first(events, "tool.completed").parent_event_id == first(events, "tool.called").id
    assert [e.payload["chosen_model"] for e in events if e.type == "route.decided"] == [
        "anthropic:claude-sonnet-4-6", "openai:gpt-4o"]
    assert events[-1].payload["disposition"] == "completed" and events[-1].payload["turn_count"] == 2

    # The second Anthropic request answers the id Anthropic issued; OpenAI gets the call paired with its result.
    second = server.bodies(ANTHROPIC)[1]["messages"][-1]["content"][0]
    assert second["type"] == "tool_result" and second["tool_use_id"] == RECORDED_TOOL_ID
    openai_messages = server.bodies(OPENAI)[0]["messages"]
    assistant = next(m for m in openai_messages if m.get("tool_calls"))
    following = openai_messages[openai_messages.index(assistant) + 1]
    assert following == {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"],
                         "content": "wrote 14 bytes to notes.txt"}

    # Resume in a new process: the stored history, tool ids and sticky model come back.
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    done = metis(["run", "--session", session_id, "--json", "one more thing"], cli_env(home, server.base_url),
                 workspace)
    assert done.returncode == 0, done.stderr
    assert '"session_id": "' + session_id in done.stdout
    resumed = server.bodies(OPENAI)[1]["messages"]
    assert resumed[: len(openai_messages)] == openai_messages
    assert resumed[len(openai_messages):] == [{"role": "assistant", "content": messages[5].text()},
                                               {"role": "user", "content": "one more thing"}]
    after = stored_events(home, session_id)
    assert types(after)[len(events):] == ["session.resumed", *TEXT_TURN, "session.ended"]
    assert len(stored_messages(home, session_id)) == 8


def test_swap_to_a_text_only_model_is_refused_with_the_reason_and_the_model_stays(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    (workspace / "pixel.png").write_bytes(PNG)
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    term = chat(home, server, workspace)
    try:
        term.expect(PROMPT)
        term.type("/attach pixel.png")
        term.expect(r"attached pixel\.png to your next message")
        term.type("what is in this picture?")
        term.expect(r"Hello there!")
        term.expect(PROMPT)
        term.type("/model openai:gpt-3.5-turbo")
        refused = term.expect(PROMPT)
        assert "error: refused: cannot use openai:gpt-3.5-turbo:" in refused and "supports_images" in refused
        assert "model unchanged: anthropic:claude-sonnet-4-6 (default)" in refused
        term.type("/model")
        assert "model: anthropic:claude-sonnet-4-6 (default)" in term.expect(PROMPT)
        time.sleep(0.3)  # let readline take the terminal: a signal a moment before it does waits for Enter
        term.press(b"\x03")  # Ctrl-C at the prompt ends the chat and saves the session
        assert term.wait() == 0
    finally:
        term.close()
    session_id = only_session_id(home)
    messages = stored_messages(home, session_id)
    image = messages[0].content[1]
    assert isinstance(image, ImageBlock) and image.source.kind == "file_ref" and image.source.data == "pixel.png"
    sent = server.bodies(ANTHROPIC)[0]["messages"][0]["content"]
    assert sent[1]["type"] == "image" and sent[1]["source"]["media_type"] == "image/png"
    assert server.bodies(OPENAI) == []
    events = stored_events(home, session_id)
    assert types(events) == ["session.created", *TEXT_TURN, "routing.constraint_failure", "session.ended"]
    refusal = events[-2].payload
    assert (refusal["candidate_model"], refusal["missing_capability"]) == ("openai:gpt-3.5-turbo", "supports_images")
    with SessionStore(home / "metis.db") as store:
        assert store.get_session(session_id).active_model is None


def test_ctrl_c_during_a_stalled_stream_cancels_the_turn_and_the_chat_goes_on(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    stalled = Reply.recording("anthropic", "stream__text_basic.sse", stall_before=b"event: content_block_stop")
    server.script(ANTHROPIC, stalled, Reply.recording("anthropic", "stream__text_basic.sse"))
    term = chat(home, server, workspace)
    try:
        term.expect(PROMPT)
        term.type("tell me a story")
        term.expect(r"Hello there!")
        term.press(b"\x03")
        term.expect(r"cancelled: the partial answer is kept and the chat goes on")
        term.expect(PROMPT)
        term.type("ok, shorter please")
        term.expect(r"Hello there!\n")
        term.expect(PROMPT)
        term.press(b"\x04")  # Ctrl-D leaves
        assert term.wait() == 0
    finally:
        term.close()
    session_id = only_session_id(home)
    messages = stored_messages(home, session_id)
    assert [(m.role, m.status) for m in messages] == [
        (Role.USER, MessageStatus.COMPLETE), (Role.ASSISTANT, MessageStatus.CANCELLED),
        (Role.USER, MessageStatus.COMPLETE), (Role.ASSISTANT, MessageStatus.COMPLETE)]
    assert messages[1].text() == "Hello there!" and messages[1].metadata.stop_reason == "cancelled"
    events = stored_events(home, session_id)
    assert types(events) == ["session.created", "turn.started", "route.decided", "llm.call_started",
                             "turn.cancelled", *TEXT_TURN, "session.ended"]
    cancelled = first(events, "turn.cancelled")
    assert cancelled.parent_event_id == first(events, "turn.started").id
    assert cancelled.payload == {"reason": "user_cancel", "partial_llm_calls": 1, "partial_tool_calls": 0}
    assert events[-1].payload["turn_count"] == 2


def test_an_unanswered_confirmation_is_denied_when_its_timeout_passes(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "x")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    term = chat(home, server, workspace, "--confirm-timeout", "1")
    try:
        term.expect(PROMPT)
        term.type("write a note")
        assert re.search(r"\(denied automatically in [01]s\)", term.expect(r"confirm> "))
        shown = term.expect(r"Hello there!")
        assert "no answer: the tool was not run" in shown and "✗" not in shown
        term.expect(PROMPT)
        term.type("/exit")
        assert term.wait() == 0
    finally:
        term.close()
    assert not (workspace / "notes.txt").exists()
    events = stored_events(home, only_session_id(home))
    assert first(events, "tool.confirmation_resolved").payload["decision"] == "timeout"
    assert first(events, "tool.failed").payload["error_class"] == "confirmation_timeout"


def test_run_on_a_terminal_asks_before_a_tool_writes_and_honours_a_denial(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "x")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    term = PtySession(["run", "write a note"], cli_env(home, server.base_url), workspace)
    try:
        assert "write_file wants to write files" in term.expect(r"confirm> ")
        term.type("n")
        assert "denied" in term.expect(r"Hello there!")
        assert term.wait() == 0
    finally:
        term.close()
    assert not (workspace / "notes.txt").exists()
    events = stored_events(home, only_session_id(home))
    resolved = first(events, "tool.confirmation_resolved")
    assert resolved.payload["decision"] == "deny" and resolved.payload["scope"] is None
    assert first(events, "tool.failed").payload["error_class"] == "user_denied"


def test_attach_refused_for_a_text_only_model_names_the_setting_that_allows_it(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    (workspace / "pixel.png").write_bytes(PNG)
    term = chat(home, server, workspace, "--model", "openai:gpt-3.5-turbo")
    try:
        term.expect(PROMPT)
        term.type("/attach pixel.png")
        term.expect(r"attached pixel\.png to your next message")
        term.expect(PROMPT)
        term.type("what is in this picture?")
        refused = term.expect(PROMPT)
        assert "supports_images: true" in refused and "config.yaml" in refused
        assert server.bodies(OPENAI) == []  # refused before any model call
        term.type("/exit")
    finally:
        term.close()
