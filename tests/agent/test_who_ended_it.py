"""Who ended a turn or denied a tool, and why, on every path: a person (actor user) only when a
person did it; a disconnect, a clock or a policy is the system, with its reason."""

from __future__ import annotations

import asyncio

import pytest
from support_servers import Reply

from metis_core.agent.confirmation import ConfirmationAnswer, ConfirmationRequest

from .conftest import Harness


def asks_for_the_weather(h: Harness) -> None:
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__tool_use_input_json_delta.sse"),
                                  Reply.fixture("anthropic", "stream__text_basic.sse")])


async def never_answered(request: ConfirmationRequest) -> ConfirmationAnswer:
    await asyncio.sleep(3600)
    raise AssertionError("unreachable")


async def test_a_confirmation_nobody_answers_in_time_is_a_system_timeout(harness: Harness) -> None:
    h = harness
    asks_for_the_weather(h)
    session = h.runtime.sessions.create(h.workspace)
    session.confirmation.confirmer = never_answered
    session.confirmation.timeout_seconds = 0.05
    await h.runtime.turns.run(session, "weather in Paris?")
    [resolved] = [e for e in h.events(session.id) if e.type == "tool.confirmation_resolved"]
    assert (resolved.payload["decision"], resolved.actor.value) == ("timeout", "system")
    assert h.weather.calls == []


@pytest.mark.parametrize(("reason", "actor"), [("client_disconnect", "system"), (None, "user")])
async def test_a_turn_ended_at_the_question_is_a_denial_by_whoever_ended_it(
    harness: Harness, reason: str | None, actor: str
) -> None:
    h = harness
    asks_for_the_weather(h)
    session = h.runtime.sessions.create(h.workspace)
    session.confirmation.confirmer = never_answered
    turn = asyncio.create_task(h.runtime.turns.run(session, "weather in Paris?"))
    for _ in range(500):
        if any(e.type == "tool.confirmation_requested" for e in h.events(session.id)):
            break
        await asyncio.sleep(0.01)
    turn.cancel(reason)
    result = await turn
    assert result.cancelled and result.cancel_reason == (reason or "user_cancel")
    events = h.events(session.id)
    [resolved] = [e for e in events if e.type == "tool.confirmation_resolved"]
    [cancelled] = [e for e in events if e.type == "turn.cancelled"]
    assert (resolved.payload["decision"], resolved.actor.value) == ("deny", actor)
    assert (cancelled.payload["reason"], cancelled.actor.value) == (reason or "user_cancel", actor)
