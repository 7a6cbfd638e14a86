"""`replay_session`: a recorded session re-run on scripted targets that agree, diverge at a tool call,
and diverge in text — the per-turn report, the linked session, the events, and the OpenWOP export.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from conftest import fixtures_root
from jsonschema import Draft202012Validator, FormatChecker
from support_servers import Reply

from metis_core.agent.turn import TurnResult
from metis_core.errors import ReplayError
from metis_core.export import SessionRecording, load_recording, openwop_documents
from metis_core.messages import Role
from metis_core.replay.recorded_tools import RecordedTool
from metis_core.replay.session_replay import ReplayReport, replay_session

from .conftest import ORIGINAL_MODEL, USER_TEXTS, ReplayHarness


def openwop_schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    folder = fixtures_root().parent / "openwop"
    return (json.loads((folder / "run-event.schema.json").read_text()),
            json.loads((folder / "run-event-payloads.subset.schema.json").read_text()))


def anthropic(*names: str) -> list[Reply]:
    return [Reply.fixture("anthropic", name) for name in names]


async def replayed_on_gpt_4_1(h: ReplayHarness) -> tuple[str, ReplayReport]:
    """The original (its session id) and its replay on openai:gpt-4.1, which calls the tool with other
    arguments, then answers each turn in other words."""
    source = await h.record_original()
    h.script.script("openai", [Reply.fixture("openai_chat", "stream__tool_call_single.sse"),
                               Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse"),
                               Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")])
    return source, await replay_session(h.runtime, source, "openai:gpt-4.1")


async def test_a_target_that_agrees_shows_no_divergence_and_its_tools_come_from_the_recording(
    harness: ReplayHarness,
) -> None:
    h = harness
    source = await h.record_original()
    h.script.script("anthropic", anthropic("stream__tool_use_input_json_delta.sse", "stream__text_basic.sse",
                                           "stream__text_basic.sse"))
    report = await replay_session(h.runtime, source, "anthropic:claude-sonnet-4-5")

    assert [t.diverged for t in report.turns] == [False, False]
    first = report.turns[0]
    assert [c.name for c in first.original.tool_calls] == [c.name for c in first.replay.tool_calls] == ["get_weather"]
    assert first.original.model == ORIGINAL_MODEL and first.replay.model == "anthropic:claude-sonnet-4-5"
    assert first.similarity == 1.0 and first.original.input_tokens == first.replay.input_tokens > 0
    assert h.weather.calls == [{"location": "Paris"}], "the replay did not run the tool again"
    assert report.tools_served == 1 and report.tools_unmatched == 0
    tool_result = h.bodies("anthropic.test")[-2]["messages"][2]["content"][0]
    assert tool_result["type"] == "tool_result" and "Paris: 73°F, clear" in str(tool_result["content"])

    linked = h.runtime.store.get_session(report.replay_session_id)
    assert linked.title == f"replay of {source} on anthropic:claude-sonnet-4-5"
    assert linked.replay_of == source and report.to_json()["replay_of"] == source
    assert [r.id for r in h.runtime.store.replays_of(source)] == [report.replay_session_id]
    messages = h.runtime.store.load_messages(report.replay_session_id)
    assert [m.text() for m in messages if m.role is Role.USER] == list(USER_TEXTS)
    assert not [e for e in h.events(report.replay_session_id) if e.type == "turn.replay_diverged"]
    assert report.summary()["divergence_rate"] == 0.0


async def test_a_target_that_calls_the_tool_differently_diverges_at_the_tool_call(harness: ReplayHarness) -> None:
    h = harness
    _, report = await replayed_on_gpt_4_1(h)

    first, second = report.turns
    divergence = first.first
    assert divergence is not None
    assert (divergence.kind, divergence.point, divergence.step) == ("output", "tool_call", 0)
    assert divergence.detail == "get_weather: arguments differ in city, location"
    assert first.replay.tool_calls[0].arguments["city"] == "New York City"
    assert [d.point for d in first.divergences] == ["tool_call", "text"]
    assert report.tools_unmatched == 1 and h.weather.calls == [{"location": "Paris"}]
    assert second.first is not None and second.first.point == "text" and second.similarity < 0.8
    assert report.summary()["divergence_rate"] == 1.0

    events = [e for e in h.events(report.replay_session_id) if e.type == "turn.replay_diverged"]
    assert [(e.payload["turn_index"], e.payload["divergence_point"]) for e in events] == [
        (1, "tool_call"), (1, "text"), (2, "text")]
    assert events[0].payload["source_turn_id"] == first.source_turn_id
    assert events[0].payload["original_model"] == ORIGINAL_MODEL
    assert "New York" not in str([e.payload for e in events]), "no argument values in the events"
    completed = [e for e in h.events(report.replay_session_id) if e.type == "turn.completed"]
    assert events[0].timestamp_us < completed[0].timestamp_us, "divergences are inside their turn"


async def test_a_target_that_answers_differently_diverges_in_text_only(harness: ReplayHarness) -> None:
    h = harness
    source = await h.record_original()
    h.script.script("anthropic", anthropic("stream__tool_use_input_json_delta.sse", "stream__cache_read_usage.sse",
                                           "stream__text_basic.sse"))
    report = await replay_session(h.runtime, source, "anthropic:claude-sonnet-4-5")

    first, second = report.turns
    assert [(d.kind, d.point, d.step) for d in first.divergences] == [("output", "text", 1)]
    assert first.divergences[0].similarity is not None and first.divergences[0].similarity < 0.8
    assert not second.diverged
    document = report.to_json()
    assert document["turns"][0]["first_divergence"]["point"] == "text"
    assert document["turns"][0]["original"]["tool_calls"] == [{"name": "get_weather",
                                                               "arguments": {"location": "Paris"}}]
    assert Decimal(document["summary"]["replay_cost_usd"]) > 0


async def test_the_openwop_export_of_a_replay_maps_divergences_to_replay_diverged(harness: ReplayHarness) -> None:
    h = harness
    source, report = await replayed_on_gpt_4_1(h)
    h.events(report.replay_session_id)
    recording: SessionRecording = load_recording(report.replay_session_id, h.runtime.store, h.runtime.trace)
    documents, summary = openwop_documents(recording)

    envelope, payloads = openwop_schemas()
    envelope_validator = Draft202012Validator(envelope, format_checker=FormatChecker())
    diverged_schema = {**payloads["$defs"]["replayDiverged"], "$defs": payloads["$defs"]}
    diverged = [d for d in documents if d["type"] == "replay.diverged"]
    assert len(diverged) == 3
    for document in diverged:
        envelope_validator.validate(document)
        Draft202012Validator(diverged_schema).validate(document["payload"])
    first = diverged[0]
    assert first["runId"] == report.turns[0].replay_turn_id
    assert first["payload"]["sourceRunId"] == report.turns[0].source_turn_id
    original, _ = openwop_documents(load_recording(source, h.runtime.store, h.runtime.trace))
    [called] = [d for d in original if d["type"] == "agent.toolCalled"]
    assert called["runId"] == first["payload"]["sourceRunId"]
    assert (first["payload"]["atSequence"], first["payload"]["originalEventId"]) == (called["sequence"],
                                                                                   called["eventId"])
    answers = [d for d in original if d["type"] == "node.completed" and d["runId"] == called["runId"]]
    assert diverged[1]["payload"]["atSequence"] == answers[-1]["sequence"], "text: the original's final answer"
    assert (first["payload"]["divergenceKind"], first["payload"]["divergencePoint"]) == ("output", "agent.toolCalled")
    assert diverged[1]["payload"]["divergencePoint"] == "node.completed"
    for run_id in {d["runId"] for d in documents}:
        run = [d for d in documents if d["runId"] == run_id]
        assert run[-1]["type"] == "run.completed", "replay.diverged comes before the run completes"
    assert "turn.replay_diverged" not in summary.skipped


async def test_turns_outside_the_range_are_copied_and_the_range_is_checked(harness: ReplayHarness) -> None:
    h = harness
    source = await h.record_original()
    h.script.script("anthropic", anthropic("stream__text_basic.sse"))
    report = await replay_session(h.runtime, source, "anthropic:claude-sonnet-4-5", turns=(2, 2))
    assert [t.index for t in report.turns] == [2] and not report.turns[0].diverged
    copied = h.runtime.store.load_messages(report.replay_session_id)
    assert [m.role for m in copied] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.USER,
                                        Role.ASSISTANT]
    original_ids = {m.id for m in h.runtime.store.load_messages(source)}
    assert not original_ids & {m.id for m in copied}
    with pytest.raises(ReplayError, match=r"--turns 2\.\.3 is outside session .* 2 user turn\(s\)"):
        await replay_session(h.runtime, source, "anthropic:claude-sonnet-4-5", turns=(2, 3))


async def test_live_tools_run_the_real_tool_again(harness: ReplayHarness) -> None:
    h = harness
    source = await h.record_original()
    h.script.script("anthropic", anthropic("stream__tool_use_input_json_delta.sse", "stream__text_basic.sse"))
    report = await replay_session(h.runtime, source, "anthropic:claude-sonnet-4-5", turns=(1, 1), live_tools=True)
    assert h.weather.calls == [{"location": "Paris"}, {"location": "Paris"}]
    assert report.tools_served == 0 and not report.turns[0].diverged
    kinds = [e.type for e in h.events(report.replay_session_id)]
    assert "tool.confirmation_requested" not in kinds, "the harness approves everything"
    assert h.runtime.tools.get("get_weather") is h.weather, "the live registry is back after the replay"


async def test_a_json_answer_replayed_as_prose_is_a_type_mismatch(harness: ReplayHarness) -> None:
    h = harness
    h.script.script("anthropic", anthropic("stream__recorded_structured_output.sse"))
    session = h.runtime.sessions.create(h.workspace)
    original = await h.runtime.turns.run(session, "Two numbers as a JSON array")
    assert original.answer == "[12345,67890]"
    h.runtime.sessions.end(session)

    h.script.script("anthropic", anthropic("stream__text_basic.sse"))
    report = await replay_session(h.runtime, session.id, "anthropic:claude-sonnet-4-5")
    [turn] = report.turns
    assert (turn.original.structured_valid, turn.replay.structured_valid) == (True, False)
    assert [(d.kind, d.point) for d in turn.divergences] == [("output", "text"), ("type-mismatch", "structured_output")]
    kinds = [e.payload["divergence_kind"] for e in h.events(report.replay_session_id)
             if e.type == "turn.replay_diverged"]
    assert kinds == ["output", "type-mismatch"]


async def test_a_system_prompt_before_the_first_turn_is_carried_into_the_replay(harness: ReplayHarness) -> None:
    from metis_core.messages import system_message

    h = harness
    h.script.script("anthropic", anthropic("stream__text_basic.sse"))
    session = h.runtime.sessions.create(h.workspace)
    prompt = system_message("Answer like a pirate.").model_copy(update={"session_id": session.id})
    session.append(prompt, h.runtime.store)
    await h.runtime.turns.run(session, "Say hello")
    h.runtime.sessions.end(session)

    h.script.script("anthropic", anthropic("stream__text_basic.sse"))
    report = await replay_session(h.runtime, session.id, "anthropic:claude-sonnet-4-5")
    assert not report.turns[0].diverged
    replayed = h.runtime.store.load_messages(report.replay_session_id)
    assert replayed[0].role is Role.SYSTEM and replayed[0].text() == "Answer like a pirate."
    assert "Answer like a pirate." in str(h.bodies("anthropic.test")[-1]["system"])


async def test_a_turn_of_another_session_runs_the_live_tools_while_a_replay_answers_from_the_recording(
    harness: ReplayHarness, monkeypatch: pytest.MonkeyPatch,
) -> None:
    h = harness
    source = await h.record_original()
    other = h.runtime.sessions.create(h.workspace)
    served = RecordedTool.run
    beside: list[TurnResult] = []

    async def serve_after_a_turn_beside(tool: RecordedTool, tool_input: dict[str, Any], context: Any) -> Any:
        beside.append(await h.runtime.turns.run(other, USER_TEXTS[0]))  # while the replay waits on its tool
        return await served(tool, tool_input, context)

    monkeypatch.setattr(RecordedTool, "run", serve_after_a_turn_beside)
    # the replay's tool call, then the turn beside it (a tool call and its answer), then the replay's answer
    h.script.script("anthropic", anthropic("stream__tool_use_input_json_delta.sse",
                                           "stream__tool_use_input_json_delta.sse", "stream__text_basic.sse",
                                           "stream__text_basic.sse"))
    report = await replay_session(h.runtime, source, "anthropic:claude-sonnet-4-5", turns=(1, 1))

    assert [r.error for r in beside] == [None]
    assert h.weather.calls == [{"location": "Paris"}, {"location": "Paris"}], "the turn beside ran the live tool"
    assert report.tools_served == 1 and report.tools_unmatched == 0 and not report.turns[0].diverged
    assert h.runtime.tools.get("get_weather") is h.weather
