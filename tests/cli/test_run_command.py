"""`metis run` in a subprocess (no terminal) against recorded traffic served on 127.0.0.1.

Covers the --json document, the exit codes scripts rely on (0, 2, 3, 4, 5), confirmations
without a terminal, and that key values never reach the output even when a provider echoes one.
Recordings: Anthropic stream__text_basic.sse, error__400_invalid_request_error_bad_shape.json,
error__401_authentication_error.json (its message extended with the key, to test scrubbing), and
the tool_use recording turned into a write_file call (cli_harness.write_file_call_stream).
"""

from __future__ import annotations

import json
from pathlib import Path

from fixture_files import read_bytes, read_json

from metis_core.messages import Role

from .cli_harness import (
    ANTHROPIC_KEY,
    cli_env,
    first,
    metis,
    only_session_id,
    stored_events,
    stored_messages,
    types,
    write_file_call_stream,
)
from .replay_server import ANTHROPIC, ReplayServer, Reply

TEXT_RUN = ["session.created", "turn.started", "route.decided", "llm.call_started", "llm.call_completed",
            "turn.completed", "session.ended"]


def test_json_output_carries_session_answer_model_usage_and_cost(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["run", "--json", "Say hello"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    session_id = only_session_id(home)
    assert document == {
        "session_id": session_id, "turn_id": document["turn_id"], "answer": "Hello there!",
        "model": "anthropic:claude-sonnet-4-6", "stop_reason": "end_turn",
        "usage": {"input_tokens": 11, "output_tokens": 6, "llm_calls": 1, "tool_calls": 0},
        # claude-sonnet-4-6 at $3 / $15 per million tokens: 11 * 3e-6 + 6 * 15e-6
        "cost_usd": "0.000123", "unpriced_calls": 0, "cancelled": False, "error": None, "exit_code": 0,
    }
    messages = stored_messages(home, session_id)
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT]
    assert messages[1].text() == "Hello there!" and str(messages[1].metadata.usage.cost_usd) == "0.000123"  # type: ignore[union-attr]
    events = stored_events(home, session_id)
    assert types(events) == TEXT_RUN
    assert first(events, "turn.started").turn_id == document["turn_id"]
    assert server.bodies(ANTHROPIC)[0]["messages"] == [{"role": "user", "content": "Say hello"}]


def test_plain_output_streams_the_answer_to_stdout_and_the_summary_to_stderr(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["run", "Say hello"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0 and done.stdout == "Hello there!\n"
    assert "anthropic:claude-sonnet-4-6 · 1 call · 11 in / 6 out tokens · $0.000123" in done.stderr


def test_missing_key_exits_3_and_names_the_variable(home: Path, server: ReplayServer, workspace: Path) -> None:
    env = cli_env(home, server.base_url)
    del env["ANTHROPIC_API_KEY"]
    done = metis(["run", "--model", "anthropic:claude-sonnet-4-6", "hi"], env, workspace)
    assert done.returncode == 3
    assert done.stderr.strip() == ("error: no API key for provider 'anthropic': set ANTHROPIC_API_KEY "
                                   "(or run `metis demo` offline)")
    as_json = metis(["run", "--json", "--model", "sonnet", "hi"], env, workspace)
    assert as_json.returncode == 3 and json.loads(as_json.stdout)["exit_code"] == 3
    assert server.requests == []


def test_with_no_provider_configured_run_exits_3_with_what_to_set(home: Path, workspace: Path) -> None:
    done = metis(["run", "hi"], cli_env(home, None), workspace)
    assert done.returncode == 3
    assert "no model provider is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_provider_error_exits_4_with_one_red_line(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, Reply.recording("anthropic", "error__400_invalid_request_error_bad_shape.json", 400))
    done = metis(["run", "hi"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 4 and done.stdout == ""
    error_lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert error_lines == ["error: anthropic HTTP 400 invalid_request_error: messages.0: Input does not match "
                           "the expected shape."]
    events = stored_events(home, only_session_id(home))
    failed = first(events, "llm.call_failed")
    assert failed.payload["error_class"] == "invalid_request"
    assert types(events)[-2:] == ["turn.completed", "session.ended"]
    assert events[-1].payload["disposition"] == "error"


def test_a_key_echoed_back_by_a_provider_never_reaches_the_output(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    body = read_json("anthropic", "error__401_authentication_error.json")
    body["error"]["message"] += f" {ANTHROPIC_KEY}"  # a server that echoes the key it was sent
    server.script(ANTHROPIC, Reply(401, json.dumps(body).encode(), "application/json"))
    done = metis(["run", "--json", "hi"], cli_env(home, server.base_url), workspace)  # metis() asserts no key
    assert done.returncode == 4
    assert "invalid x-api-key [redacted key]" in done.stderr
    assert "[redacted key]" in json.loads(done.stdout)["error"]
    assert server.requests[0].headers["x-api-key"] == ANTHROPIC_KEY  # the key was sent, just never shown


def test_without_a_terminal_or_yes_tool_confirmations_are_denied(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "x")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["run", "--json", "write notes"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0 and json.loads(done.stdout)["answer"] == "Hello there!"
    assert not (workspace / "notes.txt").exists()
    assert "note: write_file was not run: no terminal to ask for confirmation (pass --yes" in done.stderr
    events = stored_events(home, only_session_id(home))
    resolved = first(events, "tool.confirmation_resolved")
    assert resolved.payload["decision"] == "deny" and resolved.actor == "system"  # a policy decided, not a person
    failed = first(events, "tool.failed")
    assert failed.payload["error_class"] == "permission_denied" and "user" not in failed.payload["error_message"]


def test_yes_approves_tool_calls_without_asking(home: Path, server: ReplayServer, workspace: Path) -> None:
    server.script(ANTHROPIC, Reply(200, write_file_call_stream("notes.txt", "x")),
                  Reply.recording("anthropic", "stream__text_basic.sse"))
    done = metis(["run", "--yes", "write notes"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 0
    assert (workspace / "notes.txt").read_text() == "x"
    kinds = types(stored_events(home, only_session_id(home)))
    assert "tool.completed" in kinds and "tool.confirmation_requested" not in kinds


def test_an_unknown_model_is_a_usage_error(home: Path, server: ReplayServer, workspace: Path) -> None:
    done = metis(["run", "--model", "anthropic:claude-nope", "hi"], cli_env(home, server.base_url), workspace)
    assert done.returncode == 2 and "unknown model 'anthropic:claude-nope'" in done.stderr
    override = metis(["run", "@gpt-4q hi"], cli_env(home, server.base_url), workspace)
    assert override.returncode == 2 and "Did you mean gpt-4o" in override.stderr
    assert server.requests == []


def test_continuing_with_a_model_that_cannot_read_the_history_exits_5(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    (workspace / "pixel.png").write_bytes(bytes.fromhex("89504e470d0a1a0a"))
    server.script(ANTHROPIC, Reply.recording("anthropic", "stream__text_basic.sse"))
    env = cli_env(home, server.base_url)
    assert metis(["run", "--attach", "pixel.png", "what is this?"], env, workspace).returncode == 0
    session_id = only_session_id(home)
    done = metis(["run", "--session", session_id, "--model", "openai:gpt-3.5-turbo", "and now?"], env, workspace)
    assert done.returncode == 5
    assert done.stderr.startswith("error: cannot use openai:gpt-3.5-turbo:") and "supports_images" in done.stderr
    assert len(stored_messages(home, session_id)) == 2
    assert types(stored_events(home, session_id))[-3:] == ["session.resumed", "routing.constraint_failure",
                                                           "session.ended"]
    nothing = metis(["run", "@gpt-4o   "], env, workspace)
    assert nothing.returncode == 2 and "nothing to send after @gpt-4o" in nothing.stderr


def test_a_malformed_stream_event_is_named_and_the_partial_answer_and_trace_are_kept(
    home: Path, server: ReplayServer, workspace: Path
) -> None:
    # The symptom: a content_block_delta without "index" printed `unexpected KeyError: 'index'`,
    # saved nothing and left the trace at llm.call_started.
    body = read_bytes("anthropic", "stream__text_basic.sse").replace(
        b'"index":0,"delta":{"type":"text_delta","text":" there"}', b'"delta":{"type":"text_delta"}'
    )
    server.script(ANTHROPIC, Reply(200, body))
    done = metis(["run", "--json", "Say hello"], cli_env(home, server.base_url), workspace)
    assert "unexpected KeyError" not in done.stderr
    document = json.loads(done.stdout)
    assert document["answer"] == "Hello" and "content_block_delta" in document["error"]
    assert "KeyError: 'index'" in document["error"] and done.returncode != 0
    session_id = only_session_id(home)
    assert stored_messages(home, session_id)[-1].text() == "Hello"
    events = stored_events(home, session_id)
    # The provider billed the partial answer (message_start's usage): one completed call, as the store
    # counts it; why the turn failed is on turn.completed.
    assert types(events)[-4:] == ["llm.call_started", "llm.call_completed", "turn.completed", "session.ended"]
    (ended,) = [e for e in events if e.type == "turn.completed"]
    assert ended.payload["stop_reason"] == "error" and "content_block_delta" in ended.payload["signals_extra"]["error"]
