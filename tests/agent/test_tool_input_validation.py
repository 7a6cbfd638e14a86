"""Tool input is validated where the answer is parsed (the record: metadata.tool_input_violations) and
again at dispatch, where a failing call gets tool.input_invalid and an error result, and never runs."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from support_servers import Reply

from metis_core.export import event_log_entries, load_recording
from metis_core.export.event_log_schemas import PAYLOAD_SCHEMAS
from metis_core.messages import SideEffects, ToolDefinition, ToolResultBlock, user_message

from .conftest import Harness, WeatherTool

OPENAI_CALL = "stream__tool_call_single.sse"  # get_weather with {"city": "New York City"}


def test_the_client_records_violations_of_the_offered_schema_and_nothing_for_a_valid_call(harness: Harness) -> None:
    h = harness
    client = h.runtime.client
    city = ToolDefinition(name="get_weather", description="weather", side_effects=SideEffects.NETWORK,
                          input_schema={"type": "object", "properties": {"city": {"type": "string"}},
                                        "required": ["city"], "additionalProperties": False})
    h.script.script("openai", [Reply.fixture("openai_chat", OPENAI_CALL)] * 4)
    history = [user_message("weather in NYC?")]

    def final(tools: list[ToolDefinition]) -> Any:
        return list(client.stream(history, "openai:gpt-4o", tools=tools))[-1].message  # type: ignore[union-attr]

    wrong = final([WeatherTool.definition])
    use = wrong.tool_uses()[0]
    problems = wrong.metadata.tool_input_violations[use.id]
    assert any("location" in p for p in problems) and any("city" in p for p in problems)
    assert wrong.metadata.status.value == "complete" and use.input == {"city": "New York City"}  # kept as sent
    assert final([city]).metadata.tool_input_violations is None
    other = ToolDefinition(name="read_file", description="read", input_schema={"type": "object"})
    unoffered = final([other])
    assert unoffered.metadata.tool_input_violations == {
        unoffered.tool_uses()[0].id: ["'get_weather' was not offered to the model (offered: read_file)"]}
    assert final([]).metadata.tool_input_violations is None  # nothing offered: nothing to check against


async def test_a_call_that_fails_its_schema_is_answered_with_tool_input_invalid_and_never_runs(
    harness: Harness,
) -> None:
    h = harness
    h.script.script("openai", [Reply.fixture("openai_chat", OPENAI_CALL),
                               Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")])
    session = h.runtime.sessions.create(h.workspace)
    h.runtime.sessions.swap_model(session, "openai:gpt-4o")
    result = await h.runtime.turns.run(session, "weather in NYC?")
    assert result.error is None and h.weather.calls == [] and h.confirmer.asked == []

    stored = h.runtime.store.load_messages(session.id)
    call = next(m for m in stored if m.tool_uses())
    use = call.tool_uses()[0]
    ingress = call.metadata.tool_input_violations
    assert ingress is not None and set(ingress) == {use.id}
    answer = next(m for m in stored if m.role.value == "tool")
    block = answer.content[0]
    assert isinstance(block, ToolResultBlock) and block.is_error and block.tool_use_id == use.id
    assert "invalid tool input" in block.content[0].text  # type: ignore[union-attr]

    events = h.events(session.id)
    types = [e.type for e in events]
    assert "tool.called" not in types and "tool.confirmation_requested" not in types
    invalid = next(e for e in events if e.type == "tool.input_invalid")
    completed = [e for e in events if e.type == "llm.call_completed"]
    assert invalid.parent_event_id == completed[0].id and len(completed) == 2
    assert invalid.payload == {"tool_name": "get_weather", "validation_errors": ingress[use.id]}
    second = h.requests_to("openai.test")[1]["messages"]
    assert second[-1]["role"] == "tool" and "invalid tool input" in second[-1]["content"]

    entries, _ = event_log_entries(load_recording(session.id, h.runtime.store, h.runtime.trace))
    error = next(e for e in entries if e["source_event_id"] == invalid.id)
    assert error["event_type"] == "ERROR" and error["payload"]["error_type"] == "tool_input_invalid"
    Draft202012Validator(PAYLOAD_SCHEMAS["ERROR"]).validate(error["payload"])
    assert "city" not in error["payload"]["message"]  # the violations themselves only with content
