"""Explicit and implicit feedback: each signal on the record with its payload, parent and sensitivity."""

from __future__ import annotations

import pytest

from metis_core.errors import FeedbackTargetError
from metis_core.events.envelope import Actor, Sensitivity

from .conftest import CHEAP, LearningHarness


async def test_thumbs_down_on_the_last_turn_is_parented_to_its_turn_completed(learning: LearningHarness) -> None:
    h = learning
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "What is a monad?")
    event = h.loop.feedback.rate(session.id, "down", comment="too vague")

    completed = h.of_type("turn.completed", session.id)[0]
    assert event.type == "feedback.explicit" and event.parent_event_id == completed.id
    assert event.actor is Actor.USER and event.sensitivity is Sensitivity.AGGREGATABLE
    assert event.turn_id == result.turn_id
    assert event.payload == {"scope": "turn", "rating": "thumbs_down", "comment": "too vague",
                             "subject_turn_id": result.turn_id, "subject_session_id": session.id}


async def test_session_feedback_after_the_end_is_parented_to_session_ended(learning: LearningHarness) -> None:
    h = learning
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "Hello")
    h.runtime.sessions.end(session)
    event = h.loop.feedback.rate(session.id, "up", scope="session")
    ended = h.of_type("session.ended", session.id)[0]
    assert event.parent_event_id == ended.id and event.turn_id is None
    assert event.payload["scope"] == "session" and event.payload["subject_turn_id"] is None


async def test_feedback_on_a_turn_that_does_not_exist_is_refused(learning: LearningHarness) -> None:
    h = learning
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    with pytest.raises(FeedbackTargetError, match="no finished turn"):
        h.loop.feedback.rate(session.id, "up")
    await h.runtime.turns.run(session, "Hello")
    with pytest.raises(FeedbackTargetError, match="has 1 turn"):
        h.loop.feedback.rate(session.id, "up", turn=3)
    with pytest.raises(FeedbackTargetError, match="not a rating"):
        h.loop.feedback.rate(session.id, "meh")
    assert h.of_type("feedback.explicit") == []


async def test_retry_edit_followup_and_accept_are_detected_from_the_next_message(learning: LearningHarness) -> None:
    h = learning
    h.answers(4)
    session = h.runtime.sessions.create(h.workspace)
    first = await h.runtime.turns.run(session, "Write a haiku about the sea in autumn")
    second = await h.runtime.turns.run(session, "write a haiku about the sea in autumn!")
    third = await h.runtime.turns.run(session, "No, actually make it about mountains")
    fourth = await h.runtime.turns.run(session, "Thanks. Now list three rivers in France")
    signals = h.of_type("feedback.implicit", session.id)
    starts = {e.turn_id: e for e in h.of_type("turn.started", session.id)}
    assert [(s.payload["type"], s.payload["subject_turn_id"]) for s in signals] == [
        ("retry", first.turn_id), ("edit_followup", second.turn_id), ("accept", third.turn_id)]
    retry, edit, accept = signals
    assert retry.parent_event_id == starts[second.turn_id].id and retry.turn_id == second.turn_id
    assert 0.5 <= retry.payload["confidence"] <= 0.9 and retry.payload["context"]["turns_back"] == 1
    assert edit.payload["confidence"] == 0.7 and edit.payload["context"] == {"pattern": "no_actually"}
    assert accept.parent_event_id == starts[fourth.turn_id].id and accept.payload["confidence"] == 0.3
    for signal in signals:
        assert signal.sensitivity is Sensitivity.PSEUDONYMOUS and signal.actor is Actor.SYSTEM
        assert "sea" not in str(signal.payload) and "mountains" not in str(signal.payload)


async def test_model_swap_right_after_a_turn_is_manual_swap(learning: LearningHarness) -> None:
    h = learning
    h.answers(1)
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "Summarize the plot of Hamlet")
    h.runtime.sessions.swap_model(session, CHEAP)
    (swap,) = h.of_type("feedback.implicit", session.id)
    completed = h.of_type("turn.completed", session.id)[0]
    assert swap.payload == {"type": "manual_swap", "confidence": 0.6, "subject_turn_id": result.turn_id,
                            "context": {"from_model": "anthropic:claude-sonnet-4-6", "to_model": CHEAP}}
    assert swap.parent_event_id == completed.id


async def test_ending_after_a_failed_turn_is_abandon(learning: LearningHarness) -> None:
    h = learning
    h.script.script("anthropic", [])  # no reply scripted: the call fails
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "Explain quantum tunnelling")
    assert result.error
    h.runtime.sessions.end(session, "abandoned")
    (abandon,) = h.of_type("feedback.implicit", session.id)
    ended = h.of_type("session.ended", session.id)[0]
    assert abandon.payload["type"] == "abandon" and abandon.payload["subject_turn_id"] == result.turn_id
    assert abandon.parent_event_id == ended.id and abandon.payload["context"] == {"last_turn": "error"}
