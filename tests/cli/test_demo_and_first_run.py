"""`metis demo` end to end, its scripted server's request checks, and the first-run path of chat.

The demo's wire bodies are generated in code; here the official anthropic and openai SDKs (test
oracles only) consume them to prove the framing is the APIs' own. The Ollama `/api/tags` reply
is a minimal body written in the test: no recording of that endpoint exists in the fixtures.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from metis_core.cli.demo.server import DemoServer
from metis_core.cli.demo.tour import README_TEXT
from metis_core.messages import Role
from metis_core.store.sessions import SessionStore

from .cli_harness import PtySession, cli_env, metis, only_session_id, stored_events, stored_messages, types
from .replay_server import ReplayServer, Reply

TAGS = Reply(200, json.dumps({"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest"}]}).encode(),
             "application/json")


def test_demo_tours_the_real_stack_offline_and_says_the_model_is_scripted(home: Path, workspace: Path) -> None:
    done = metis(["demo"], cli_env(home, None), workspace)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "The model is SCRIPTED" in out and "no money was spent: the model was scripted" in out
    assert '→ read_file {"path": "README.md"}' in out and f"✓ read_file: {len(README_TEXT.encode())} bytes" in out
    assert "README.md is titled “Metis demo workspace”" in out
    assert "model: openai:gpt-4o · 4 messages carried over" in out
    assert "It called read_file({\"path\":\"README.md\"}) as call call_" in out
    assert "llm.call_completed  anthropic:claude-sonnet-4-6 ·" in out and "llm.call_completed  openai:gpt-4o ·" in out
    assert "cost per model" in out and "│ total " in out and "pricing version 2026-" in out
    assert "The scripted server checked 3 requests: all well-formed." in out
    assert not home.exists()  # its own temporary METIS_HOME


def test_demo_keep_stores_the_session_with_the_swap_in_metis_home(home: Path, workspace: Path) -> None:
    done = metis(["demo", "--keep"], cli_env(home, None), workspace)
    assert done.returncode == 0, done.stderr
    session_id = only_session_id(home)
    with SessionStore(home / "metis.db") as store:
        record = store.get_session(session_id)
    shutil.rmtree(Path(record.workspace_path).parent, ignore_errors=True)
    messages = stored_messages(home, session_id)
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.USER,
                                          Role.ASSISTANT]
    assert [m.metadata.provider for m in messages if m.role is Role.ASSISTANT] == ["anthropic", "anthropic", "openai"]
    assert all(m.metadata.usage.cost_usd for m in messages if m.role is Role.ASSISTANT)  # type: ignore[union-attr]
    assert record.active_model == "openai:gpt-4o"
    assert types(stored_events(home, session_id))[-1] == "session.ended"


def anthropic_request(server: DemoServer, messages: list[dict[str, object]], **headers: str) -> httpx.Response:
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "stream": True, "messages": messages}
    return httpx.post(f"{server.base_url}/v1/messages", json=body,
                      headers={"x-api-key": "k", "anthropic-version": "2023-06-01", **headers})


def test_demo_server_rejects_a_tool_result_for_an_id_it_never_issued() -> None:
    with DemoServer() as server:
        bad = anthropic_request(server, [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_forged", "name": "read_file",
                                               "input": {"path": "README.md"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_other", "content": "x"}]},
        ])
        assert bad.status_code == 400
        error = bad.json()["error"]
        assert error["type"] == "invalid_request_error"
        assert "tool_use ids were found without tool_result blocks immediately after: toolu_forged" in error["message"]
        assert "unexpected tool_use_id found in tool_result blocks: toolu_other" in error["message"]
        assert "toolu_forged was never issued by this model" in error["message"]
        no_key = httpx.post(f"{server.base_url}/v1/messages", json={}, headers={"anthropic-version": "2023-06-01"})
        assert no_key.status_code == 400 and "x-api-key header: required" in no_key.json()["error"]["message"]


def test_demo_server_rejects_openai_tool_calls_without_their_tool_messages() -> None:
    with DemoServer() as server:
        call = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        body = {"model": "gpt-4o", "stream": True, "messages": [
            {"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "user", "content": "and?"}]}
        bad = httpx.post(f"{server.base_url}/v1/chat/completions", json=body, headers={"authorization": "Bearer k"})
        assert bad.status_code == 400
        assert "must be followed by tool messages responding to each 'tool_call_id'. Missing: call_1" in \
            bad.json()["error"]["message"]


def test_demo_streams_are_read_by_the_official_sdks() -> None:
    """The generated SSE bodies parse with the providers' own SDKs (test-only oracles)."""
    with DemoServer() as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="demo", max_retries=0)
        with client.messages.stream(model="claude-sonnet-4-6", max_tokens=100,
                                    messages=[{"role": "user", "content": "What does README.md say?"}]) as stream:
            message = stream.get_final_message()
        assert message.stop_reason == "tool_use" and message.content[0].type == "text"
        tool_use = message.content[1]
        assert tool_use.type == "tool_use" and tool_use.name == "read_file" and tool_use.input == {"path": "README.md"}
        assert message.usage.output_tokens > 0 and message.usage.input_tokens > 0

        chat = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="demo", max_retries=0)
        chunks = list(chat.chat.completions.create(model="gpt-4o", stream=True, stream_options={"include_usage": True},
                                                   messages=[{"role": "user", "content": "hello"}]))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text.startswith("I can see 1 messages of this session")
        assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
    assert [s.status for s in server.served] == [200, 200]


def test_first_run_without_a_terminal_explains_every_provider_then_runs_the_demo(home: Path, workspace: Path) -> None:
    done = metis(["chat"], cli_env(home, None), workspace)
    assert done.returncode == 0, done.stderr
    guidance, _, demo = done.stdout.partition("metis demo: a tour of the real stack, offline")
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY",
                     "OLLAMA_HOST", "METIS_OPENAI_COMPATIBLE_BASE_URL"):
        assert variable in guidance
    assert "No Ollama server answers on http://127.0.0.1:9." in guidance
    assert "here is the offline demo instead. Its model is SCRIPTED" in guidance
    assert "The scripted server checked 3 requests: all well-formed." in demo


@pytest.fixture
def ollama(server: ReplayServer) -> ReplayServer:
    server.script("/api/tags", TAGS)
    return server


def test_first_run_suggests_a_local_ollama_when_there_is_no_terminal(
    home: Path, workspace: Path, ollama: ReplayServer
) -> None:
    done = metis(["chat"], cli_env(home, None, METIS_OLLAMA_PROBE_URL=ollama.base_url), workspace)
    assert done.returncode == 0
    assert f"An Ollama server answers on {ollama.base_url} with: llama3.2:latest." in done.stdout
    assert "To use it: metis chat --model ollama:llama3.2:latest" in done.stdout
    assert [r.path for r in ollama.requests] == ["/api/tags"]


def test_first_run_offers_a_local_ollama_on_a_terminal(home: Path, workspace: Path, ollama: ReplayServer) -> None:
    term = PtySession(["chat"], cli_env(home, None, METIS_OLLAMA_PROBE_URL=ollama.base_url), workspace)
    try:
        term.expect(r"Chat with ollama:llama3\.2:latest now\? \[Y/n\] ")
        term.type("n")
        term.expect(r"The scripted server checked 3 requests: all well-formed\.")
        assert term.wait() == 0
    finally:
        term.close()
