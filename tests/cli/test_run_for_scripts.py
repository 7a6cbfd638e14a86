"""`metis run` as scripts use it, through the installed command: stdin, -s, -o, -c, ids, tools, --no-log.

Every request the command sends is checked on the replay server (127.0.0.1), which serves the
recorded Anthropic stream__text_basic.sse and the OpenAI stream__text_with_usage_chunk.sse.
"""

from __future__ import annotations

import json
from pathlib import Path

from .cli_harness import cli_env, metis, only_session_id, stored_messages
from .replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply

TEXT = Reply.recording("anthropic", "stream__text_basic.sse")


def run(home: Path, server: ReplayServer, workspace: Path, *args: str, stdin: str = "") -> dict[str, object]:
    done = metis(["run", "--json", *args], cli_env(home, server.base_url), workspace, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_piped_text_is_appended_to_the_prompt(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, TEXT, TEXT)
    run(home, server, workspace, "summarize", stdin="line one\nline two\n")
    sent = server.bodies(ANTHROPIC)[0]["messages"]
    assert sent == [{"role": "user", "content": "summarize\n\nline one\nline two"}]
    run(home, server, workspace, stdin="only piped text\n")  # no prompt argument: the piped text is the prompt
    assert server.bodies(ANTHROPIC)[1]["messages"][-1]["content"] == "only piped text"
    nothing = metis(["run"], cli_env(home, server.base_url), workspace, stdin="  \n")
    assert nothing.returncode == 2 and "nothing to send" in nothing.stderr


def test_system_prompt_options_and_tools_reach_the_request(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, TEXT, TEXT)
    run(home, server, workspace, "-s", "Answer in French.", "-o", "temperature=0.2", "-o", "max_tokens=50",
        "--tools", "read_file,search_files", "hello")
    body = server.bodies(ANTHROPIC)[0]
    assert body["system"] == "Answer in French." and body["temperature"] == 0.2 and body["max_tokens"] == 50
    assert [t["name"] for t in body["tools"]] == ["read_file", "search_files"]
    run(home, server, workspace, "--no-tools", "hello")
    assert "tools" not in server.bodies(ANTHROPIC)[1]
    env = cli_env(home, server.base_url)
    bad = metis(["run", "-o", "temprature=1", "hi"], env, workspace)
    assert bad.returncode == 2 and "unknown model option 'temprature'" in bad.stderr
    worse = metis(["run", "-o", "max_tokens=-3", "hi"], env, workspace)
    assert worse.returncode == 2 and "needs a whole number of at least 1" in worse.stderr
    unknown_tool = metis(["run", "--tools", "rm_rf", "hi"], env, workspace)
    assert unknown_tool.returncode == 2 and "no tool named 'rm_rf'" in unknown_tool.stderr
    assert len(server.requests) == 2


def test_continue_and_session_prefixes_pick_up_the_conversation(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, TEXT, TEXT, TEXT, TEXT)
    first = run(home, server, workspace, "first")
    session_id = str(first["session_id"])
    assert run(home, server, workspace, "-c", "second")["session_id"] == session_id
    prefix = session_id[: len("sess_") + 8]
    assert run(home, server, workspace, "--session", prefix, "third")["session_id"] == session_id
    assert run(home, server, workspace, "--session", "latest", "fourth")["session_id"] == session_id
    assert [m.text() for m in stored_messages(home, session_id) if m.role.value == "user"] == [
        "first", "second", "third", "fourth"]
    assert len(server.bodies(ANTHROPIC)[3]["messages"]) == 7
    env = cli_env(home, server.base_url)
    missing = metis(["run", "--session", "sess_NOPE", "hi"], env, workspace)
    assert missing.returncode == 6 and "no session sess_NOPE" in missing.stderr
    ambiguous_home = metis(["sessions", "show", "sess_"], env, workspace)
    assert ambiguous_home.returncode == 0  # one session: the bare prefix is unique
    shown = metis(["sessions", "show", prefix.removeprefix("sess_").lower()], env, workspace)
    assert shown.returncode == 0 and f"session {session_id}" in shown.stdout
    assert metis(["trace", "show", prefix], env, workspace).returncode == 0


def test_an_ambiguous_prefix_is_refused_with_the_candidates(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, TEXT, TEXT)
    one, two = (str(run(home, server, workspace, "hi")["session_id"]) for _ in range(2))
    done = metis(["sessions", "show", "sess_"], cli_env(home, None), workspace)
    assert done.returncode == 2 and "is the start of several sessions" in done.stderr
    assert one in done.stderr and two in done.stderr


def test_no_log_keeps_nothing(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, TEXT)
    document = run(home, server, workspace, "--no-log", "hello")
    assert document["answer"] == "Hello there!" and document["session_id"] is None
    listed = metis(["sessions", "list"], cli_env(home, None), workspace)
    assert listed.stdout == ""
    plain = metis(["run", "--no-log", "-c", "hi"], cli_env(home, server.base_url), workspace)
    assert plain.returncode == 2 and "cannot continue a stored session" in plain.stderr


def test_bare_model_names_resolve_when_one_provider_lists_them(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    document = run(home, server, workspace, "-m", "gpt-4o-mini", "hello")
    assert document["model"] == "openai:gpt-4o-mini"
    assert server.bodies(OPENAI)[0]["model"] == "gpt-4o-mini"
    server.script(ANTHROPIC, TEXT)
    assert run(home, server, workspace, "-m", "claude-sonnet-4-6", "hi")["model"] == "anthropic:claude-sonnet-4-6"
    typo = metis(["run", "-m", "claude-sonet-4-6", "hi"], cli_env(home, server.base_url), workspace)
    assert typo.returncode == 2 and "Did you mean anthropic:claude-sonnet-4-6" in typo.stderr


def test_output_for_other_programs_is_plain_rows_with_whole_ids(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, TEXT)
    session_id = str(run(home, server, workspace, "a title long enough to be wrapped in any narrow table")[
        "session_id"])
    env = cli_env(home, None, COLUMNS="40")
    rows = metis(["sessions", "list"], env, workspace).stdout.splitlines()
    assert len(rows) == 1 and rows[0].split("\t")[0] == session_id
    assert rows[0].split("\t")[1] == "a title long enough to be wrapped in any narrow table"
    models = metis(["models"], env, workspace).stdout.splitlines()
    openrouter = [line.split("\t")[0] for line in models if line.startswith("openrouter:")]
    assert openrouter and all(" " not in model_id for model_id in openrouter)
    assert only_session_id(home) == session_id
