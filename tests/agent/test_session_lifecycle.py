"""Session lifecycle (bus spec §6.1/§6.2): idle sessions end as `abandoned`; turns cancelled by a
timeout or a client disconnect say so; trace sharing puts the scrubbed message on turn.started and
records it user_controlled (§4.4.1). All through the Runtime over recorded traffic."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from support_servers import API_KEYS, Reply

from metis_core.events.envelope import Event, Sensitivity
from metis_core.export import event_log_entries, load_recording, openwop_documents
from metis_core.messages import MessageStatus

from .conftest import Harness


def by_type(events: list[Event], event_type: str) -> list[Event]:
    return [e for e in events if e.type == event_type]


async def test_a_session_idle_past_the_timeout_ends_abandoned_and_a_recent_one_stays_open(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
    idle = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(idle, "hello")
    fresh = h.runtime.sessions.create(h.workspace)
    later = datetime.now(UTC) + timedelta(hours=23)
    assert h.runtime.sessions.end_inactive(now=later, idle_hours=24) == []

    # 24 hours after `fresh` was last touched, only the older `idle` is past the cutoff.
    h.runtime.store.update_session(fresh.id, title="still here")
    cutoff_now = h.runtime.store.get_session(fresh.id).updated_at + timedelta(hours=24)
    ended = h.runtime.sessions.end_inactive(now=cutoff_now, idle_hours=24)
    assert ended == [idle.id]
    assert h.runtime.store.get_session(idle.id).disposition == "abandoned"
    assert h.runtime.store.get_session(fresh.id).ended_at is None

    (event,) = by_type(h.events(idle.id), "session.ended")
    assert event.payload["disposition"] == "abandoned" and event.payload["turn_count"] == 1
    assert event.payload["total_cost_usd"] > 0
    entries, _ = event_log_entries(load_recording(idle.id, h.runtime.store, h.runtime.trace))
    assert entries[-1]["event_type"] == "SESSION_END" and entries[-1]["payload"]["status"] == "timeout"
    assert h.runtime.sessions.end_inactive(now=cutoff_now, idle_hours=24) == []  # ended once only


async def test_a_turn_past_its_timeout_is_cancelled_for_timeout_and_keeps_the_partial_answer(harness: Harness) -> None:
    h = harness
    h.hang_first_call()
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "tell me a story", timeout_seconds=0.5)
    assert result.cancelled and result.cancel_reason == "timeout"
    assert h.runtime.store.load_messages(session.id)[-1].status is MessageStatus.CANCELLED
    events = h.events(session.id)
    (cancelled,) = by_type(events, "turn.cancelled")
    assert cancelled.payload["reason"] == "timeout" and cancelled.payload["partial_llm_calls"] == 1
    assert cancelled.actor.value == "system" and not by_type(events, "turn.completed")
    recording = load_recording(session.id, h.runtime.store, h.runtime.trace)
    (run,) = [d for d in openwop_documents(recording)[0] if d["type"] == "run.cancelled"]
    assert run["payload"]["reason"] == "timeout" and run["payload"]["cancelledBy"] == "system"
    (note,) = [e for e in event_log_entries(recording)[0] if e["event_type"] == "ANNOTATION"]
    assert note["payload"]["content"]["reason"] == "timeout"

    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
    quick = await h.runtime.turns.run(session, "shorter", timeout_seconds=30)  # the timer is disarmed after
    assert not quick.cancelled and quick.final is not None
    await asyncio.sleep(0)
    assert len(by_type(h.events(session.id), "turn.cancelled")) == 1


@pytest.mark.parametrize(("message", "reason", "actor"), [
    ("client_disconnect", "client_disconnect", "system"), (None, "user_cancel", "user")])
async def test_a_cancelled_turn_records_the_reason_its_canceller_gave(
    harness: Harness, message: str | None, reason: str, actor: str
) -> None:
    h = harness
    session, task = await h.hung_turn()
    task.cancel(message)
    result = await task
    assert result.cancelled and result.cancel_reason == reason
    (cancelled,) = by_type(h.events(session.id), "turn.cancelled")
    assert cancelled.payload["reason"] == reason and cancelled.actor.value == actor


SECRET_TEXT = ("mail jane.doe@example.com the key sk-ant-api03-SECRETSECRET99 and AKIAIOSFODNN7EXAMPLE, "
               "see /home/jane/project/notes.txt")


async def test_trace_sharing_fills_the_scrubbed_message_and_records_it_user_controlled(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")] * 3)
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, SECRET_TEXT)
    (private,) = by_type(h.events(session.id), "turn.started")
    assert private.payload["user_message_text_redacted"] is None and private.sensitivity is Sensitivity.PRIVATE

    h.runtime.close()
    (h.home / "config.yaml").write_text("sessions:\n  share_traces: true\n")
    h.runtime = h.open_runtime()
    resumed = h.runtime.sessions.resume(session.id)
    await h.runtime.turns.run(resumed, SECRET_TEXT)
    shared = by_type(h.events(session.id), "turn.started")[-1]
    text = shared.payload["user_message_text_redacted"]
    assert text == "mail [email] the key [key] and [key], see /home/[user]/project/notes.txt"
    assert shared.sensitivity is Sensitivity.USER_CONTROLLED
    assert shared.payload["user_message_hash"] == private.payload["user_message_hash"]

    # The configured key's exact value goes too, whatever its shape (it was sent, so it is known).
    await h.runtime.turns.run(resumed, f"my key is {API_KEYS['anthropic']} ok")
    last = by_type(h.events(session.id), "turn.started")[-1].payload["user_message_text_redacted"]
    assert last == "my key is [redacted key] ok"
