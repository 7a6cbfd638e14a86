"""The agent loop end to end over recorded provider traffic: events, parents, persistence."""

from __future__ import annotations

import asyncio

import pytest
from support_servers import Reply

from metis_core.agent.confirmation import ConfirmationAnswer
from metis_core.errors import CapabilityMismatchError
from metis_core.events.envelope import Event
from metis_core.messages import ImageBlock, ImageSource, MessageStatus, Role

from .conftest import Harness

TOOL_TURN = ["turn.started", "route.decided", "llm.call_started", "llm.call_completed", "tool.called",
             "tool.confirmation_requested", "tool.confirmation_resolved", "tool.completed", "llm.call_started",
             "llm.call_completed", "turn.completed"]


def by_type(events: list[Event]) -> dict[str, list[Event]]:
    out: dict[str, list[Event]] = {}
    for event in events:
        out.setdefault(event.type, []).append(event)
    return out


def script_weather_turn(h: Harness) -> None:
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__tool_use_input_json_delta.sse"),
                                  Reply.fixture("anthropic", "stream__text_basic.sse")])


async def test_tool_turn_with_confirmation_records_the_exact_event_chain(harness: Harness) -> None:
    h = harness
    script_weather_turn(h)
    h.confirmer.answers = [ConfirmationAnswer("allow", "once")]
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "What's the weather in SF?")

    assert result.answer == "Hello there!"
    assert h.weather.calls == [{"location": "Paris"}]
    events = h.events(session.id)
    assert [e.type for e in events] == ["session.created", *TOOL_TURN]
    e = {ev.type + (f"#{i}" if ev.type == "llm.call_started" else ""): ev
         for i, ev in enumerate(events)}
    kinds = by_type(events)
    started, decided = kinds["turn.started"][0], kinds["route.decided"][0]
    call1, call2 = kinds["llm.call_started"]
    done1, done2 = kinds["llm.call_completed"]
    called, completed = kinds["tool.called"][0], kinds["tool.completed"][0]
    requested, resolved = kinds["tool.confirmation_requested"][0], kinds["tool.confirmation_resolved"][0]
    assert started.parent_event_id is None and decided.parent_event_id == started.id
    assert call1.parent_event_id == started.id and done1.parent_event_id == call1.id
    assert called.parent_event_id == done1.id and requested.parent_event_id == called.id
    assert resolved.parent_event_id == requested.id and completed.parent_event_id == called.id
    assert call2.parent_event_id == completed.id and done2.parent_event_id == call2.id
    assert kinds["turn.completed"][0].parent_event_id == started.id
    assert resolved.payload["decision"] == "allow" and resolved.payload["scope"] == "once"
    assert done1.payload["produced_tool_calls"] == 1 and done1.payload["input_tokens"] == 377
    assert kinds["turn.completed"][0].payload["tool_call_count"] == 1
    assert all(ev.turn_id == started.turn_id for ev in events[1:])
    del e

    stored = h.runtime.store.load_messages(session.id)
    assert [m.role for m in stored] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert stored == session.history
    # The second request replays Anthropic's own tool id for the call it made.
    second = h.requests_to("anthropic.test")[1]
    tool_result = second["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"


async def test_denied_confirmation_returns_an_error_result_and_tool_failed(harness: Harness) -> None:
    h = harness
    script_weather_turn(h)
    h.confirmer.answers = [ConfirmationAnswer("deny")]
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "weather?")
    assert h.weather.calls == []
    kinds = by_type(h.events(session.id))
    failed = kinds["tool.failed"][0]
    assert failed.payload["error_class"] == "user_denied"
    assert failed.parent_event_id == kinds["tool.called"][0].id
    assert kinds["tool.confirmation_resolved"][0].payload["scope"] is None
    tool_message = next(m for m in session.history if m.role is Role.TOOL)
    assert tool_message.tool_results()[0].is_error


async def test_allow_for_session_is_not_asked_again(harness: Harness) -> None:
    h = harness
    script_weather_turn(h)
    script_weather_turn(h)
    h.confirmer.answers = [ConfirmationAnswer("allow", "session")]
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "weather?")
    await h.runtime.turns.run(session, "and again?")
    assert len(h.confirmer.asked) == 1 and len(h.weather.calls) == 2


async def test_mid_session_swap_continues_on_openai_with_valid_ids(harness: Harness) -> None:
    h = harness
    script_weather_turn(h)
    h.confirmer.answers = [ConfirmationAnswer("allow", "once")]
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "weather in SF?")
    h.runtime.sessions.swap_model(session, "openai:gpt-4o")
    h.script.script("openai", [Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")])
    result = await h.runtime.turns.run(session, "thanks, and summarize")
    assert result.final is not None and result.final.metadata.provider == "openai"
    assert result.final.metadata.routing is not None and result.final.metadata.routing.mode.value == "manual"
    body = h.requests_to("openai.test")[0]
    assistant = next(m for m in body["messages"] if m.get("tool_calls"))
    call_id = assistant["tool_calls"][0]["id"]
    index = body["messages"].index(assistant)
    assert body["messages"][index + 1] == {"role": "tool", "tool_call_id": call_id,
                                           "content": "Paris: 73°F, clear"}
    assert len(call_id) <= 40
    assert h.runtime.store.get_session(session.id).active_model == "openai:gpt-4o"


async def test_swap_to_a_model_that_cannot_carry_the_history_is_refused(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
    session = h.runtime.sessions.create(h.workspace)
    image = ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgo="), media_type="image/png")
    await h.runtime.turns.run(session, "what is in this picture?", attachments=[image])
    requests_before = len(h.script.requests)
    with pytest.raises(CapabilityMismatchError, match="image") as caught:
        h.runtime.sessions.swap_model(session, "ollama:llama3")
    assert caught.value.capability == "supports_images"
    assert session.sticky_model is None
    assert len(h.script.requests) == requests_before


async def test_cancellation_keeps_the_partial_answer_and_the_session_goes_on(harness: Harness) -> None:
    h = harness
    session, task = await h.hung_turn()
    task.cancel()
    result = await task
    assert result.cancelled
    stored = h.runtime.store.load_messages(session.id)
    assert stored[-1].status is MessageStatus.CANCELLED and stored[-1].text()
    kinds = by_type(h.events(session.id))
    cancelled = kinds["turn.cancelled"][0]
    assert cancelled.parent_event_id == kinds["turn.started"][0].id
    assert cancelled.payload["reason"] == "user_cancel" and "turn.completed" not in kinds

    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
    after = await h.runtime.turns.run(session, "ok, shorter please")
    assert after.final is not None and after.final.status is MessageStatus.COMPLETE


async def test_session_resumes_in_a_new_runtime_and_continues(harness: Harness) -> None:
    h = harness
    script_weather_turn(h)
    h.confirmer.answers = [ConfirmationAnswer("allow", "once")]
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "weather?")
    h.runtime.close()

    h.runtime = h.open_runtime()
    resumed = h.runtime.sessions.resume(session.id)
    assert resumed.history == session.history
    assert resumed.tool_ids.to_dict() == session.tool_ids.to_dict()
    h.script.script("openai", [Reply.fixture("openai_chat", "stream__text_with_usage_chunk.sse")])
    result = await h.runtime.turns.run(resumed, "more?", override="openai:gpt-4o")
    assert result.final is not None and result.final.metadata.routing.mode.value == "override"  # type: ignore[union-attr]
    kinds = by_type(h.events(session.id))
    assert kinds["session.resumed"][0].payload["last_event_id_at_resume"] is not None


async def test_cancel_while_a_tool_runs_keeps_the_stored_response_and_stores_nothing_twice(harness: Harness) -> None:
    from metis_core.cli.demo.anthropic_wire import message_stream, new_tool_use_id

    h = harness
    h.script.script("anthropic", [Reply(200, message_stream(
        "claude-haiku-4-5", text="Running it.", input_tokens=40,
        tool_use=(new_tool_use_id(), "run_command", {"command": "sleep 30"})), {"content-type": "text/event-stream"})])
    h.confirmer.answers = [ConfirmationAnswer("allow", "once")]
    session = h.runtime.sessions.create(h.workspace)
    turn = asyncio.create_task(h.runtime.turns.run(session, "run the slow thing"))
    for _ in range(200):
        await asyncio.sleep(0.05)
        if any(e.type == "tool.called" for e in h.events(session.id)):
            break
    turn.cancel()
    result = await asyncio.wait_for(turn, 10)
    assert result.cancelled
    stored = h.runtime.store.load_messages(session.id)
    # the response as it arrived, stored once, and an error result for its unfinished call
    assert [m.role for m in stored] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert stored[1].metadata.status is MessageStatus.COMPLETE
    assert stored[2].tool_results()[0].is_error
    assert by_type(h.events(session.id))["tool.failed"][0].payload["error_class"] == "cancelled"


async def test_parallel_tool_results_are_stored_in_call_order_whatever_order_they_finish(harness: Harness) -> None:
    from anthropic_sse import anthropic_stream

    h = harness
    slow = ("toolu_slow01", "run_command", {"command": "sleep 0.4; echo slow"})
    fast = ("toolu_fast01", "run_command", {"command": "echo fast"})
    h.script.script("anthropic", [
        Reply(200, anthropic_stream("claude-haiku-4-5", "Both at once.", [slow, fast]),
              {"content-type": "text/event-stream"}),
        Reply.fixture("anthropic", "stream__text_basic.sse"),
    ])
    h.confirmer.answers = [ConfirmationAnswer("allow", "once"), ConfirmationAnswer("allow", "once")]
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "run both")
    assert result.error is None
    finished = [e.payload["tool_use_id"] for e in by_type(h.events(session.id))["tool.completed"]]
    calls = [u.id for u in session.history[1].tool_uses()]
    assert finished == list(reversed(calls))  # the fast one finished first
    stored = h.runtime.store.load_messages(session.id)
    assert [m.tool_results()[0].tool_use_id for m in stored if m.role is Role.TOOL] == calls
