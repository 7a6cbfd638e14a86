"""A structured turn's record: every call charged on the stored message, the user's words shared as
configured, and a cancel recorded with who ended the turn and why (docs/persistence.md "Spend")."""

from __future__ import annotations

import asyncio
import threading
from decimal import Decimal

import pytest
from structured_wire import anthropic_stream
from support_servers import Reply

from metis_core.agent.structured_turn import run_structured_turn
from metis_core.messages import MessageStatus, Role
from metis_core.messages.call_spend import calls_of
from metis_core.structured.spec import output_spec

from .conftest import Harness

NUMBERS = output_spec({"title": "numbers", "type": "array", "items": {"type": "integer"}}, name="numbers")


def answer(text: str, **held: object) -> Reply:
    return Reply(200, anthropic_stream(text), {"content-type": "text/event-stream"}, **held)  # type: ignore[arg-type]


def charged(h: Harness, session_id: str) -> tuple[Decimal, int]:
    calls = [e for e in h.events(session_id) if e.type == "llm.call_completed"]
    return sum((Decimal(str(e.payload["cost_usd"])) for e in calls), Decimal(0)), len(calls)


async def test_a_retried_run_stores_one_answer_carrying_both_calls(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [answer('["one", "two"]'), answer("[1, 2]")])
    session = h.runtime.sessions.create(h.workspace)
    out = await run_structured_turn(h.runtime.turns, session, "Two numbers", NUMBERS)
    assert out.output is not None and out.output.value == [1, 2]
    [stored] = [m for m in h.runtime.store.load_messages(session.id) if m.role is Role.ASSISTANT]
    cost, calls = charged(h, session.id)
    assert calls == 2 and calls_of(stored) == (2, 0) and stored.metadata.usage is not None
    assert stored.metadata.usage.cost_usd == cost == out.turn.cost_usd
    assert h.runtime.store.get_session(session.id).total_cost_usd == cost


@pytest.mark.parametrize(("reason", "actor"), [("client_disconnect", "system"), (None, "user")])
async def test_a_cancelled_run_keeps_what_its_calls_cost_and_who_ended_it(
    harness: Harness, reason: str | None, actor: str
) -> None:
    h = harness
    release = threading.Event()
    h.script.script("anthropic", [answer('["one", "two"]'),
                                  answer("[1, 2]", held_at=b"event: content_block_stop", release=release)])
    session = h.runtime.sessions.create(h.workspace)
    task = asyncio.create_task(run_structured_turn(h.runtime.turns, session, "Two numbers", NUMBERS))
    try:
        for _ in range(500):
            if len(h.script.requests) == 2:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel(reason)
        out = await task
    finally:
        release.set()
    assert out.turn.cancelled and out.turn.llm_calls == 2
    assert [a.outcome for a in out.attempts] == ["schema-violation"]
    [cancelled] = [e for e in h.events(session.id) if e.type == "turn.cancelled"]
    assert (cancelled.payload["reason"], cancelled.actor.value) == (reason or "user_cancel", actor)
    [kept] = [m for m in h.runtime.store.load_messages(session.id) if m.role is Role.ASSISTANT]
    cost, calls = charged(h, session.id)
    assert kept.status is MessageStatus.CANCELLED and calls_of(kept) == (1, 0) == (calls, 0)
    assert kept.metadata.usage is not None and kept.metadata.usage.cost_usd == cost > 0


async def test_a_structured_turn_shares_the_users_words_when_traces_are_shared(harness: Harness) -> None:
    h = harness
    h.runtime.close()
    (h.home / "config.yaml").write_text("sessions:\n  share_traces: true\n")
    h.runtime = h.open_runtime()
    h.script.script("anthropic", [answer("[1, 2]")])
    session = h.runtime.sessions.create(h.workspace)
    await run_structured_turn(h.runtime.turns, session, "Two numbers for alice@example.com", NUMBERS)
    [started] = [e for e in h.events(session.id) if e.type == "turn.started"]
    assert started.payload["user_message_text_redacted"] == "Two numbers for [email]"
