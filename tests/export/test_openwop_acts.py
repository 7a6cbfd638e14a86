"""The agent's own acts in the OpenWOP export: thinking (agent.reasoned, content only when asked),
delegation (agent.handoff both ways, parentRunId on the worker's run), a refused swap
(model.capability.insufficient), the prompt's source (agent.promptResolved) and a replay that
differs at a refusal (replay.divergedAtRefusal). Every document is checked against the vendored
OpenWOP envelope and 1.4.0 payload schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import fixtures_root
from event_payload_samples import MINIMAL_PAYLOADS
from jsonschema import Draft202012Validator, FormatChecker
from session_samples import assistant

from metis_core.events.catalog import make_event
from metis_core.events.envelope import Event
from metis_core.export import ExportOptions, load_recording, openwop_documents
from metis_core.messages import TextBlock, ThinkingBlock, user_message
from metis_core.store import SessionStore
from metis_core.trace import TraceStore

FOLDER = fixtures_root().parent / "openwop"
ENVELOPE = Draft202012Validator(json.loads((FOLDER / "run-event.schema.json").read_text()),
                                format_checker=FormatChecker())
ACTS = json.loads((FOLDER / "run-event-payloads-1.4.0-acts.schema.json").read_text())["$defs"]
SUBSET = json.loads((FOLDER / "run-event-payloads.subset.schema.json").read_text())
PAYLOAD_DEFS = {"agent.reasoned": "agentReasoned", "agent.handoff": "agentHandoff",
                "agent.promptResolved": "agentPromptResolved",
                "model.capability.insufficient": "modelCapabilityInsufficient",
                "replay.divergedAtRefusal": "replayDivergedAtRefusal"}


def _check(documents: list[dict[str, Any]]) -> None:
    for document in documents:
        ENVELOPE.validate(document)
        name = PAYLOAD_DEFS.get(document["type"])
        if name is not None:
            Draft202012Validator(ACTS[name]).validate(document["payload"])
        elif document["type"] in SUBSET["$defs"]["_typeIndex"]["properties"]:
            Draft202012Validator({**SUBSET, **SUBSET["$defs"]["_typeIndex"]["properties"][document["type"]]}
                                 ).validate(document["payload"])


def _event(kind: str, session: str, turn: str | None, parent: Event | None = None, **changes: Any) -> Event:
    return make_event(kind, {**MINIMAL_PAYLOADS[kind], **changes}, session_id=session, turn_id=turn, parent=parent)


@pytest.fixture
def stores(tmp_path: Path) -> tuple[SessionStore, TraceStore]:
    return SessionStore(tmp_path / "metis.db"), TraceStore(tmp_path / "metis.db")


def _planner_with_worker(sessions: SessionStore, trace: TraceStore, tmp_path: Path) -> tuple[str, str, str]:
    planner = sessions.create_session(tmp_path).id
    worker = sessions.create_session(tmp_path, parent_session_id=planner).id
    turn = "01J00000000000000000000TRN"
    swap = _event("routing.constraint_failure", planner, None)  # refused before the turn, outside it
    sessions.append_message(user_message("plan it", session_id=planner))
    started = _event("turn.started", planner, turn)
    call = _event("llm.call_started", planner, turn, started)
    composed = _event("llm.prompt_composed", planner, turn, call, parts=[
        {"kind": "template", "ref": "prompt:planner@1.0.0", "version": "1.0.0", "hash": "c" * 64, "size_chars": 40,
         "trusted": True},
        {"kind": "system", "ref": "prompt:metis.system", "version": None, "hash": "d" * 64, "size_chars": 80,
         "trusted": True}])
    sessions.append_message(assistant(planner, [ThinkingBlock(text="first the plan", signature="sig=="),
                                                TextBlock(text="delegating")]))
    done = _event("llm.call_completed", planner, turn, call, stop_reason="end_turn", produced_tool_calls=0)
    handed = _event("delegate.started", planner, turn, done, worker_session_id=worker)
    back = _event("delegate.completed", planner, turn, handed, worker_session_id=worker)
    ended = _event("turn.completed", planner, turn, back)
    worker_turn = _event("turn.started", worker, "01J00000000000000000000WRK", handed)
    trace.append_many([swap, started, call, composed, done, handed, back, ended, worker_turn])
    return planner, worker, turn


def test_the_agents_acts_are_exported_and_valid(stores: tuple[SessionStore, TraceStore], tmp_path: Path) -> None:
    sessions, trace = stores
    planner, worker, turn = _planner_with_worker(sessions, trace, tmp_path)
    documents, summary = openwop_documents(load_recording(planner, sessions, trace))
    _check(documents)
    by_type = {d["type"]: d for d in documents}
    assert [d["type"] for d in documents][:2] == ["run.started", "model.capability.insufficient"]
    insufficient = by_type["model.capability.insufficient"]["payload"]
    assert insufficient == {"nodeId": "llm-call-1", "provider": "ollama", "model": "llama3",
                            "missingCapabilities": ["vision"], "fallbackAttempted": False}
    reasoned = by_type["agent.reasoned"]["payload"]
    assert reasoned["verbosity"] == "off" and reasoned["reasoning"] == "" and reasoned["signed"] is True
    assert reasoned["reasoningChars"] == len("first the plan")
    resolved = by_type["agent.promptResolved"]["payload"]
    assert resolved["resolved"] == "prompt:planner@1.0.0"
    assert [(c["layer"], c["applied"]) for c in resolved["chain"]] == [("run-configurable", True),
                                                                       ("host-defaults", False)]
    order = [d["type"] for d in documents]
    assert order.index("agent.promptResolved") == order.index("prompt.composed") - 1  # RFC 0029: before it
    handoffs = [d["payload"] for d in documents if d["type"] == "agent.handoff"]
    assert [(h["fromAgentId"], h["toAgentId"]) for h in handoffs] == [
        ("metis", "metis.worker.fast"), ("metis.worker.fast", "metis")]
    assert handoffs[0]["workerSessionId"] == worker
    assert "routing.constraint_failure" not in summary.skipped

    worker_docs, _ = openwop_documents(load_recording(worker, sessions, trace))
    _check(worker_docs)
    assert worker_docs[0]["payload"]["parentRunId"] == turn
    assert worker_docs[0]["payload"]["metadata"]["parentSessionId"] == planner

    with_content, _ = openwop_documents(load_recording(planner, sessions, trace), ExportOptions(include_content=True))
    full = next(d["payload"] for d in with_content if d["type"] == "agent.reasoned")
    assert full["verbosity"] == "full" and full["reasoning"] == "first the plan"


@pytest.mark.parametrize(("replay_refused", "kinds"), [(True, ("valid", "refusal")), (False, ("refusal", "valid"))])
def test_a_replay_that_differs_at_a_refusal_says_which_side_refused(
    stores: tuple[SessionStore, TraceStore], tmp_path: Path, replay_refused: bool, kinds: tuple[str, str],
) -> None:
    sessions, trace = stores
    replay = sessions.create_session(tmp_path).id
    turn = "01J00000000000000000000RPL"
    sessions.append_message(user_message("again", session_id=replay))
    started = _event("turn.started", replay, turn)
    call = _event("llm.call_started", replay, turn, started)
    sessions.append_message(assistant(replay, [TextBlock(text="no" if replay_refused else "here it is")]))
    done = _event("llm.call_completed", replay, turn, call,
                  stop_reason="refusal" if replay_refused else "end_turn", produced_tool_calls=0)
    diverged = _event("turn.replay_diverged", replay, turn, done, divergence_point="refusal",
                      original_sequence=4, original_event_id="01J00000000000000000000ORG")
    trace.append_many([started, call, done, diverged, _event("turn.completed", replay, turn, diverged)])
    documents, _ = openwop_documents(load_recording(replay, sessions, trace))
    _check(documents)
    (at,) = [d["payload"] for d in documents if d["type"] == "replay.divergedAtRefusal"]
    assert (at["originalEnvelopeKind"], at["replayEnvelopeKind"]) == kinds
    assert at["sourceRunId"] == MINIMAL_PAYLOADS["turn.replay_diverged"]["source_turn_id"] and at["atSequence"] == 4
    assert not [d for d in documents if d["type"] == "replay.diverged"]
