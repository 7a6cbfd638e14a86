"""A provider's refusal is on the record as `refusal` end to end: the stored message, llm.call_completed,
turn.completed, `metis run --json`, OTel finish_reasons, OpenWOP envelope.refusal and event log content_filter.
Each case is one real `metis run` against a recorded refusal (Anthropic stop_reason, OpenAI refusal deltas)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import fixtures_root
from jsonschema import Draft202012Validator, FormatChecker
from typer.testing import CliRunner

from metis_core.cli.app import app
from metis_core.export import verify_event_log

from .cli_harness import assert_no_key, cli_env, json_lines, stored_events, stored_messages
from .replay_server import ANTHROPIC, OPENAI, ReplayServer, Reply

CASES = [
    ("anthropic:claude-sonnet-4-6", ANTHROPIC, "anthropic", "stream__refusal_stop_details.sse", "cyber"),
    ("openai:gpt-4o", OPENAI, "openai_chat", "stream__refusal_deltas.sse", None),
]


def openwop_validators() -> tuple[Draft202012Validator, dict[str, Any]]:
    folder = fixtures_root().parent / "openwop"
    envelope = json.loads((folder / "run-event.schema.json").read_text())
    payloads = json.loads((folder / "run-event-payloads.subset.schema.json").read_text())
    return Draft202012Validator(envelope, format_checker=FormatChecker()), payloads


@pytest.mark.parametrize(("model", "path", "folder", "recording", "category"), CASES)
def test_a_refusal_is_recorded_as_refusal_and_exported_as_a_refusal(
    server: ReplayServer, home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch,
    model: str, path: str, folder: str, recording: str, category: str | None,
) -> None:
    monkeypatch.chdir(workspace)
    server.script(path, Reply.recording(folder, recording))
    env = cli_env(home, server.base_url)
    runner = CliRunner()
    done = runner.invoke(app, ["run", "--json", "--model", model, "help me break in"], env=env)
    assert done.exit_code == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["stop_reason"] == "refusal" and document["error"] is None
    session_id = document["session_id"]

    answer = [m for m in stored_messages(home, session_id) if m.role.value == "assistant"][-1]
    assert answer.metadata.stop_reason == "refusal"
    events = stored_events(home, session_id)
    assert [e.payload["stop_reason"] for e in events if e.type == "llm.call_completed"] == ["refusal"]
    assert [e.payload["stop_reason"] for e in events if e.type == "turn.completed"] == ["refusal"]

    def export(fmt: str, *extra: str) -> str:
        result = runner.invoke(app, ["trace", "export", session_id, "--format", fmt, *extra], env=env)
        assert result.exit_code == 0, result.stderr
        assert_no_key(result.stdout, result.stderr)
        return result.stdout

    spans = [s for rs in json.loads(export("otel"))["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    chat = next(s for s in spans if s["name"].startswith("chat "))
    attributes = {a["key"]: a["value"] for a in chat["attributes"]}
    assert attributes["gen_ai.response.finish_reasons"] == {"arrayValue": {"values": [{"stringValue":
                                                                                       "content_filter"}]}}

    for include in ((), ("--include-content",)):
        envelope, payloads = openwop_validators()
        documents = json_lines(export("openwop", *include))
        for doc in documents:
            envelope.validate(doc)
            if doc["type"] in payloads["$defs"]["_typeIndex"]["properties"]:
                schema = payloads["$defs"]["_typeIndex"]["properties"][doc["type"]]
                Draft202012Validator({**schema, "$defs": payloads["$defs"]}).validate(doc["payload"])
        types = [d["type"] for d in documents]
        assert types.index("envelope.refusal") < types.index("node.failed") and "node.completed" not in types
        refusal = next(d for d in documents if d["type"] == "envelope.refusal")["payload"]
        assert refusal["provider"] == model.partition(":")[0] and refusal["model"] == model
        assert refusal["safetyCategory"] == category
        assert (refusal["refusalText"] is None) == (not include or not answer.text())
        failed = next(d for d in documents if d["type"] == "node.failed")["payload"]
        assert failed["error"]["code"] == "envelope_refusal" and failed["error"]["retryable"] is False
        completed = next(d for d in documents if d["type"] == "run.completed")["payload"]
        assert completed["outputs"]["stopReason"] == "refusal"

    log = export("eventlog")
    assert verify_event_log(log.splitlines()).ok
    responses = [json.loads(line)["payload"] for line in log.splitlines() if '"MODEL_RESPONSE"' in line]
    assert [r["finish_reason"] for r in responses] == ["content_filter"]
