"""Structured-output steps exported as OpenWOP envelope.* documents that validate against the schemas.

A session of four structured turns run by the agent over Anthropic streams (the recorded
structured-output stream, its text or stop reason replaced where a case needs it, and the recorded
refusal stream): a fenced answer recovered; a violation, then a truncation, then success; a refusal;
three violations, the NL-to-format pair, and exhaustion. Every step must come out as its envelope.*.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator, FormatChecker
from structured_wire import anthropic_stream
from support_servers import API_KEYS, BASE_URLS, Reply, ScriptedTransport

from metis_core.adapters.client import ModelClient
from metis_core.agent.runtime import Runtime
from metis_core.agent.structured_turn import run_structured_turn
from metis_core.events.bus import EventBus
from metis_core.export import ExportOptions, SessionRecording, load_recording, openwop_documents
from metis_core.structured import OutputPolicy, output_spec
from metis_core.transport.retry import RetryPolicy

from .conftest import openwop_schemas
from .test_openwop import payload_validator

SCHEMA = {"title": "numbers", "type": "array", "items": {"type": "integer"}}
MODEL = "anthropic:claude-sonnet-4-5"


def _sse(body: bytes) -> Reply:
    return Reply(200, body, {"content-type": "text/event-stream"})


async def _record(home: Path, workspace: Path) -> tuple[SessionRecording, list[Any]]:
    script = ScriptedTransport()
    client = ModelClient(http_client=httpx.Client(transport=httpx.MockTransport(script.handler)),
                         async_http_client=httpx.AsyncClient(transport=httpx.MockTransport(script.handler)),
                         base_urls=BASE_URLS, api_keys=API_KEYS, retry=RetryPolicy(max_retries=0))
    runtime = Runtime(home=home, client=client, bus=EventBus(mode="strict"), configured_providers=set(API_KEYS))
    spec = output_spec(SCHEMA)
    outcomes = []
    try:
        session = runtime.sessions.create(workspace, model=MODEL)
        script.script("anthropic", [_sse(anthropic_stream("Sure:\n```json\n[1, 2]\n```"))])
        outcomes.append(await run_structured_turn(runtime.turns, session, "two numbers", spec))
        script.script("anthropic", [_sse(anthropic_stream('["x"]')), _sse(anthropic_stream("[1, 2", "max_tokens")),
                                    _sse(anthropic_stream())])
        outcomes.append(await run_structured_turn(runtime.turns, session, "two more", spec,
                                                  options=None, policy=OutputPolicy()))
        script.script("anthropic", [Reply.fixture("anthropic", "stream__refusal_stop_details.sse")])
        outcomes.append(await run_structured_turn(runtime.turns, session, "refuse me", spec))
        bad = _sse(anthropic_stream('["x"]'))
        script.script("anthropic", [bad, bad, bad, _sse(anthropic_stream("one and two")), bad])
        outcomes.append(await run_structured_turn(runtime.turns, session, "give up", spec,
                                                  policy=OutputPolicy(nl_to_format=True)))
        runtime.sessions.end(session)
        runtime.bus.flush()
        runtime.trace.flush()
        recording = load_recording(session.id, runtime.store, runtime.trace)
    finally:
        runtime.close()
    return recording, outcomes


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[SessionRecording, list[Any]]:
    root = tmp_path_factory.mktemp("envelope_session")
    (root / "home").mkdir()
    (root / "workspace").mkdir()
    return asyncio.run(_record(root / "home", root / "workspace"))


def test_the_four_turns_end_as_the_driver_decided(recorded: tuple[SessionRecording, list[Any]]) -> None:
    _, outcomes = recorded
    assert outcomes[0].output.value == [1, 2] and outcomes[1].output.value == [12345, 67890]
    assert [a.outcome for a in outcomes[1].output.attempts] == ["schema-violation", "truncation", "ok"]
    assert type(outcomes[2].turn.failure).__name__ == "OutputRefusedError"
    assert type(outcomes[3].turn.failure).__name__ == "OutputValidationError"


@pytest.mark.parametrize("include_content", [False, True])
def test_every_envelope_document_validates_and_sits_on_its_calls_node(
    recorded: tuple[SessionRecording, list[Any]], include_content: bool
) -> None:
    recording, _ = recorded
    envelope_schema, _ = openwop_schemas()
    envelope_validator = Draft202012Validator(envelope_schema, format_checker=FormatChecker())
    documents, summary = openwop_documents(recording, ExportOptions(include_content=include_content))
    for document in documents:
        envelope_validator.validate(document)
        payload_validator(document["type"]).validate(document["payload"])
    envelopes = [d for d in documents if d["type"].startswith("envelope.")]
    assert sorted({d["type"] for d in envelopes}) == [
        "envelope.nlToFormat.engaged", "envelope.recovery.applied", "envelope.refusal", "envelope.retry.attempted",
        "envelope.retry.exhausted", "envelope.truncated"]
    assert not [t for t in summary.skipped if t.startswith("llm.output_")]
    nodes = {d["nodeId"] for d in documents if d["type"] == "node.started"}
    assert all(d["nodeId"] in nodes and d["payload"]["nodeId"] == d["nodeId"] for d in envelopes)
    recovery = next(d for d in envelopes if d["type"] == "envelope.recovery.applied")
    assert recovery["payload"] == {"nodeId": recovery["nodeId"], "path": "markdown-fence",
                                   "byteOffset": len("Sure:\n```json\n")}
    refusal = next(d for d in envelopes if d["type"] == "envelope.refusal")
    said = "This request was refused due to policy."
    assert refusal["payload"]["refusalText"] == (said if include_content else None)
    assert refusal["payload"]["safetyCategory"] == "cyber"
    retries = [d["payload"] for d in envelopes if d["type"] == "envelope.retry.attempted"]
    assert [r["reason"] for r in retries] == ["schema-violation", "truncation", "schema-violation",
                                              "schema-violation"]
    assert all(r["attempt"] >= 2 for r in retries)
    truncated = next(d["payload"] for d in envelopes if d["type"] == "envelope.truncated")
    assert truncated["stopReason"] == "max_tokens" and truncated["partialPayloadAvailable"] is True
    exhausted = [d["payload"] for d in envelopes if d["type"] == "envelope.retry.exhausted"]
    assert [(e["finalReason"], e["totalAttempts"]) for e in exhausted] == [("refusal", 1), ("schema-violation", 5)]
