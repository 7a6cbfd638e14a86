"""Two OpenAI-compatible servers declared as METIS_PROVIDER_<NAME> DSNs, one session moving between them
through `metis run`: each server gets its own key, the record names each server, no key is stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metis_core.cli.app import app

from .cli_harness import cli_env, stored_events, stored_messages
from .replay_server import OPENAI, ReplayServer, Reply

KEY_A, KEY_B = "sk-local-A-LEAKCHECK-51c2", "sk-local-B-LEAKCHECK-7d04"


@pytest.fixture
def second_server() -> Iterator[ReplayServer]:
    replay = ReplayServer().start()
    yield replay
    replay.stop()


def test_one_session_runs_on_two_named_servers_and_the_record_names_each(
    server: ReplayServer, second_server: ReplayServer, home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace)
    server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    second_server.script(OPENAI, Reply.recording("openai_chat", "stream__text_with_usage_chunk.sse"))
    env = cli_env(home, None,
                  METIS_PROVIDER_LOCAL_A=f"openai_compatible://{KEY_A}@{server.base_url.removeprefix('http://')}/v1",
                  METIS_PROVIDER_LOCAL_B=f"openai_compatible://{KEY_B}@{second_server.base_url[7:]}/v1")
    runner = CliRunner()
    first = runner.invoke(app, ["run", "--json", "--model", "local_a:llama-3", "hi"], env=env)
    assert first.exit_code == 0, first.stderr
    session_id = json.loads(first.stdout)["session_id"]
    second = runner.invoke(app, ["run", "--json", "--session", session_id, "--model", "local_b:qwen", "again"],
                           env=env)
    assert second.exit_code == 0, second.stderr
    assert json.loads(second.stdout)["model"] == "local_b:qwen"

    (to_a,), (to_b,) = server.requests, second_server.requests
    assert to_a.headers["authorization"] == f"Bearer {KEY_A}" and to_b.headers["authorization"] == f"Bearer {KEY_B}"
    assert [m["role"] for m in to_b.body["messages"]] == ["user", "assistant", "user"]  # the history carried over

    answers = [m for m in stored_messages(home, session_id) if m.role.value == "assistant"]
    assert [(m.metadata.provider, m.metadata.model) for m in answers] == [
        ("local_a", "local_a:llama-3"), ("local_b", "local_b:qwen")]
    events = stored_events(home, session_id)
    started = [e.payload for e in events if e.type == "llm.call_started"]
    assert [(p["provider"], p["model"]) for p in started] == [("local_a", "local_a:llama-3"),
                                                            ("local_b", "local_b:qwen")]
    exported = runner.invoke(app, ["trace", "export", session_id, "--format", "eventlog"], env=env)
    requests = [json.loads(line)["payload"] for line in exported.stdout.splitlines()
                if '"MODEL_REQUEST"' in line]
    assert [p["provider"] for p in requests] == ["local_a", "local_b"]

    everything = (home / "metis.db").read_bytes() + first.stdout.encode() + first.stderr.encode() \
        + second.stdout.encode() + second.stderr.encode() + exported.stdout.encode()
    for wal in home.glob("metis.db-*"):
        everything += wal.read_bytes()
    assert KEY_A.encode() not in everything and KEY_B.encode() not in everything
