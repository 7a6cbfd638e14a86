"""`metis run --record PATH` then `metis run --replay PATH`: the second run is offline and keyless.

The record run talks to a local server serving the recorded Anthropic tool-use and text streams
(a write_file call, so the tool really runs); the replay run has no server and no key, gets the
same answer and the same tool call, and a changed prompt fails with CassetteMissError's message.
"""

from __future__ import annotations

import json
from pathlib import Path

from metis_core.cassettes import find_secrets, read_cassette

from .cli_harness import ANTHROPIC_KEY, cli_env, metis, stored_messages, write_file_call_stream
from .replay_server import ANTHROPIC, ReplayServer, Reply


def test_run_records_a_cassette_and_replays_it_without_server_or_key(
    home: Path, server: ReplayServer, workspace: Path, tmp_path: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "hello")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    cassette = tmp_path / "run.jsonl"
    recorded = metis(["run", "--json", "--yes", "--record", str(cassette), "write a note"],
                     cli_env(home, server.base_url), workspace)
    assert recorded.returncode == 0, recorded.stderr
    first = json.loads(recorded.stdout)
    assert [e.stream for e in read_cassette(cassette)] == [True, True]
    assert find_secrets(cassette.read_text(encoding="utf-8"), [ANTHROPIC_KEY]) == []
    (workspace / "notes.txt").unlink()

    server.stop()
    replay_home = tmp_path / "replay_home"
    replayed = metis(["run", "--json", "--yes", "--replay", str(cassette), "write a note"],
                     cli_env(replay_home, None), workspace)
    assert replayed.returncode == 0, replayed.stderr
    second = json.loads(replayed.stdout)
    assert second["answer"] == first["answer"] == "Hello there!"
    assert second["model"] == first["model"] and second["usage"] == first["usage"]
    assert (workspace / "notes.txt").read_text() == "hello", "the replayed tool call ran the tool again"
    tools = [b.name for m in stored_messages(replay_home, second["session_id"]) for b in m.tool_uses()]
    assert tools == ["write_file"]

    changed = metis(["run", "--json", "--yes", "--replay", str(cassette), "write another note"],
                    cli_env(tmp_path / "third_home", None), workspace)
    assert changed.returncode != 0, changed.stderr
    assert "no recording in" in changed.stdout + changed.stderr
    assert "changed message #0" in changed.stdout + changed.stderr


def test_record_and_replay_together_are_refused(home: Path, workspace: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "x.jsonl"
    cassette.write_text("")
    done = metis(["run", "--record", str(cassette), "--replay", str(cassette), "hi"], cli_env(home, None), workspace)
    assert done.returncode != 0 and "not both" in done.stderr


def chat_hello(args: list[str], env: dict[str, str], workspace: Path) -> None:
    """`metis <args>` on a terminal: say hello, see the recorded answer, exit cleanly."""
    from .cli_harness import PtySession

    term = PtySession(args, env, workspace)
    try:
        term.expect(r"you> ")
        term.type("Say hello")
        term.expect(r"Hello there!")
        term.expect(r"you> ")
        term.type("/exit")
        assert term.wait() == 0
    finally:
        term.close()


def test_chat_records_on_a_terminal_and_replays_without_server_or_key(
    home: Path, server: ReplayServer, workspace: Path, tmp_path: Path
) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    cassette = tmp_path / "chat.jsonl"
    chat_hello(["chat", "--record", str(cassette)], cli_env(home, server.base_url), workspace)
    assert len(read_cassette(cassette)) == 1
    server.stop()

    chat_hello(["chat", "--replay", str(cassette)], cli_env(tmp_path / "replay_home", None), workspace)
