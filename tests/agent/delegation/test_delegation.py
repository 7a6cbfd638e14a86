"""delegate(): a planner hands sub-tasks to worker sessions; events, parents, failures, cost, cancel."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import httpx

from metis_core.agent.session import Session
from metis_core.agent.turn import TurnResult
from metis_core.events.envelope import Event
from metis_core.messages import Role

from .conftest import WORKER_MODEL, DelegationHarness, answer, anthropic_stream, sse


def of_type(events: list[Event], event_type: str) -> list[Event]:
    return [e for e in events if e.type == event_type]


async def test_two_parallel_delegations_one_succeeds_one_fails(harness: DelegationHarness) -> None:
    h = harness

    async def broken(body: object) -> httpx.Response:
        return httpx.Response(400, json={"type": "error", "error": {"type": "invalid_request_error",
                                                                      "message": "worker request rejected"}})

    h.endpoint.behaviours["BREAK"] = broken
    h.endpoint.plan = [
        {"task": "count the words in the title", "tier": "fast", "allowed_tools": ["read_file", "no_such_tool",
                                                                                  "delegate"]},
        {"task": "BREAK on purpose", "tier": "fast"},
    ]
    planner = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(planner, "split this")

    assert result.error is None
    assert result.answer.startswith("Summary: done: count the words in the title | error: delegation failed "
                                    "(worker_error)")
    events = h.events(planner.id)
    completed_call = of_type(events, "llm.call_completed")[0]
    started = of_type(events, "delegate.started")
    assert len(started) == 2 and all(e.parent_event_id == completed_call.id for e in started)
    by_tool_use = {e.payload["tool_use_id"]: e for e in started}
    ok = of_type(events, "delegate.completed")
    failed = of_type(events, "delegate.failed")
    assert len(ok) == 1 and len(failed) == 1
    ok_started = by_tool_use[ok[0].payload["tool_use_id"]]
    failed_started = by_tool_use[failed[0].payload["tool_use_id"]]
    assert ok[0].parent_event_id == ok_started.id and failed[0].parent_event_id == failed_started.id
    assert ok_started.payload["tier"] == "fast" and ok_started.payload["resolved_model"] == f"anthropic:{WORKER_MODEL}"
    assert ok_started.payload["allowed_tool_count"] == 1
    assert ok_started.payload["dropped_tools"] == ["no_such_tool", "delegate"]
    assert failed[0].payload["failure_mode"] == "worker_error"
    assert "worker request rejected" in failed[0].payload["error_message"]
    # tool events: delegate.* sit between tool.called and its tool.completed / tool.failed
    tool_failed = of_type(events, "tool.failed")[0]
    assert tool_failed.payload["tool_use_id"] == failed[0].payload["tool_use_id"]

    # the workers are real sessions, children of the planner, with their own events
    workers = h.runtime.store.worker_sessions(planner.id)
    assert sorted(w.id for w in workers) == sorted(e.payload["worker_session_id"] for e in started)
    good = ok[0].payload["worker_session_id"]
    worker_events = h.events(good)
    assert [e.type for e in worker_events] == [
        "session.created", "turn.started", "route.decided", "llm.call_started", "llm.call_completed",
        "turn.completed", "session.ended"]
    route = of_type(worker_events, "route.decided")[0].payload
    slot = next(v for v in route["chain"] if v["policy"] == "delegate_request")
    assert slot["verdict"] == "chose" and route["chosen_model"] == f"anthropic:{WORKER_MODEL}"
    assert of_type(worker_events, "llm.call_started")[0].payload["is_worker"] is True
    assert all(e.payload["is_worker"] is False for e in of_type(events, "llm.call_started"))
    stored = h.runtime.store.load_messages(good)
    assert [m.role for m in stored] == [Role.SYSTEM, Role.USER, Role.ASSISTANT]
    assert h.runtime.store.get_session(good).parent_session_id == planner.id

    # cost: the worker's spend is on delegate.completed and rolls into the planner's total
    worker_cost = Decimal(ok[0].payload["worker_total_cost_usd"])
    assert worker_cost == Decimal(of_type(worker_events, "llm.call_completed")[0].payload["cost_usd"]).quantize(
        worker_cost) and worker_cost > 0
    assert failed[0].payload["worker_total_cost_usd"] == "0"
    planner_calls = sum(Decimal(str(e.payload["cost_usd"])) for e in of_type(events, "llm.call_completed"))
    assert h.runtime.costs.total(planner.id) == planner_calls + worker_cost
    h.runtime.sessions.end(planner)
    ended = of_type(h.events(planner.id), "session.ended")[0]
    assert Decimal(str(ended.payload["total_cost_usd"])) == planner_calls + worker_cost


async def test_no_model_for_the_tier_fails_before_any_worker_exists(harness: DelegationHarness) -> None:
    h = harness
    h.endpoint.plan = [{"task": "think hard", "tier": "deep"}, {"task": "think a bit", "tier": "balanced"}]
    planner = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(planner, "go")
    events = h.events(planner.id)
    failed = of_type(events, "delegate.failed")
    assert [e.payload["failure_mode"] for e in failed] == ["no_model_available_for_tier"] * 2
    completed_call = of_type(events, "llm.call_completed")[0]
    assert all(e.parent_event_id == completed_call.id and e.payload["worker_session_id"] is None for e in failed)
    assert of_type(events, "delegate.started") == []
    assert h.runtime.store.worker_sessions(planner.id) == []
    assert h.endpoint.worker_requests == []
    messages = " ".join(e.payload["error_message"] for e in failed)
    assert "no API key configured for openai" in messages and "'balanced'" in messages


async def test_insufficient_context_and_token_budget_are_their_own_failure_modes(tmp_path: object) -> None:
    from pathlib import Path

    h = DelegationHarness(Path(str(tmp_path)), {"fast": f"anthropic:{WORKER_MODEL}"}, max_tokens=500)
    try:
        async def need_more(body: object) -> httpx.Response:
            return await answer("INSUFFICIENT_CONTEXT: the file notes.txt")

        async def loop_forever(body: object) -> httpx.Response:
            use = ("toolu_budget" + str(len(h.endpoint.worker_requests)), "current_time", {})
            return sse(anthropic_stream(WORKER_MODEL, "checking", [use], input_tokens=400))

        h.endpoint.behaviours = {"NEED": need_more, "SPEND": loop_forever}
        (h.workspace / "spec.md").write_text("# Spec\nthe spec body\n")
        h.endpoint.plan = [
            {"task": "NEED more", "tier": "fast"},
            {"task": "SPEND tokens", "tier": "fast"},
            {"task": "use the spec", "tier": "fast", "context_mode": "explicit", "references": ["spec.md"]},
            {"task": "escape", "tier": "fast", "context_mode": "explicit", "references": ["../outside.md"]},
        ]
        planner = h.runtime.sessions.create(h.workspace)
        await h.runtime.turns.run(planner, "go")
        events = h.events(planner.id)
        modes = {e.payload["tool_use_id"]: e.payload["failure_mode"] for e in of_type(events, "delegate.failed")}
        assert sorted(modes.values()) == ["insufficient_context", "insufficient_context", "max_tokens_exceeded"]
        explicit = next(r for r in h.endpoint.worker_requests if "use the spec" in str(r["messages"][0]))
        assert "the spec body" in str(explicit["messages"][0]["content"])
        spent = next(e for e in of_type(events, "delegate.failed") if e.payload["failure_mode"] ==
                     "max_tokens_exceeded")
        assert Decimal(spent.payload["worker_total_cost_usd"]) > 0
    finally:
        h.runtime.close()


async def _planner_with_a_hanging_worker(h: DelegationHarness) -> tuple[Session, asyncio.Task[TurnResult]]:
    """A planner turn whose one worker waits on the model forever, once that worker has started."""

    async def hang(body: object) -> httpx.Response:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    h.endpoint.behaviours["HANG"] = hang
    h.endpoint.plan = [{"task": "HANG here", "tier": "fast"}]
    planner = h.runtime.sessions.create(h.workspace)
    turn = asyncio.create_task(h.runtime.turns.run(planner, "go"))
    await asyncio.wait_for(h.endpoint.worker_started.wait(), 10)
    return planner, turn


async def test_cancelling_the_planner_cancels_the_running_worker(harness: DelegationHarness) -> None:
    h = harness
    planner, turn = await _planner_with_a_hanging_worker(h)
    turn.cancel()
    result = await asyncio.wait_for(turn, 10)
    assert result.cancelled
    events = h.events(planner.id)
    failed = of_type(events, "delegate.failed")[0]
    assert failed.payload["failure_mode"] == "cancelled_by_user"
    assert failed.parent_event_id == of_type(events, "delegate.started")[0].id
    assert of_type(events, "tool.failed")[0].payload["error_class"] == "cancelled"
    assert of_type(events, "turn.cancelled")
    worker_id = failed.payload["worker_session_id"]
    worker_events = h.events(worker_id)
    assert [e.type for e in worker_events][-2:] == ["turn.cancelled", "session.ended"]
    assert of_type(worker_events, "session.ended")[0].payload["disposition"] == "abandoned"


async def test_trace_tree_shows_the_workers_events_under_delegate_started(harness: DelegationHarness) -> None:
    from rich.console import Console

    from metis_core.cli.trace_view import trace_tree

    h = harness
    h.endpoint.plan = [{"task": "list the files", "tier": "fast"}]
    planner = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(planner, "go")
    worker = h.runtime.store.worker_sessions(planner.id)[0].id
    console = Console(width=200, record=True, no_color=True)
    console.print(trace_tree(planner.id, h.events(planner.id), h.events))
    lines = console.export_text().splitlines()
    started = next(i for i, line in enumerate(lines) if "delegate.started" in line)
    depth = lines[started].index("delegate.started")
    block = lines[started + 1:]
    worker_line = next(i for i, line in enumerate(block) if f"worker session {worker}" in line)
    assert block[worker_line].index("worker session") > depth
    nested = [line for line in block[worker_line:] if "is_worker" in line or "llm.call_started" in line]
    assert nested and nested[0].index("llm.call_started") > depth
    completed = next(line for line in block if "delegate.completed" in line)
    assert completed.index("delegate.completed") > depth and f"anthropic:{WORKER_MODEL}" in lines[started]


def test_delegate_is_offered_only_when_tiers_are_configured(harness: DelegationHarness, tmp_path: object) -> None:
    from pathlib import Path

    from metis_core.agent.runtime import Runtime
    from metis_core.agent.tools.registry import ToolRegistry
    from metis_core.agent_config import DelegationConfig

    assert "delegate" in harness.runtime.tools.names()
    home = Path(str(tmp_path)) / "plain-home"
    home.mkdir()
    with Runtime(home=home, configured_providers={"anthropic"}) as plain:
        assert "delegate" not in plain.tools.names()
    from metis_core.agent.delegation.tiers import worker_tools

    registry = harness.runtime.tools
    chosen = worker_tools(registry, DelegationConfig(worker_tools=["read_file", "write_file"]), None)
    assert chosen.registry.names() == ["read_file", "write_file"] and chosen.dropped == []
    with_skills = registry.extended([])
    assert isinstance(with_skills, ToolRegistry)
    asked = worker_tools(registry, DelegationConfig(), ["skill_load", "run_command"])
    assert asked.registry.names() == ["run_command"] and asked.dropped == ["skill_load"]


async def test_a_disconnect_that_cancels_the_planner_is_recorded_as_one_by_the_worker_and_the_planner(
    harness: DelegationHarness,
) -> None:
    h = harness
    planner, turn = await _planner_with_a_hanging_worker(h)
    turn.cancel("client_disconnect")
    result = await asyncio.wait_for(turn, 10)
    assert result.cancelled and result.cancel_reason == "client_disconnect"
    events = h.events(planner.id)
    [cancelled] = of_type(events, "turn.cancelled")
    assert (cancelled.payload["reason"], cancelled.actor.value) == ("client_disconnect", "system")
    failed = of_type(events, "delegate.failed")[0]
    assert "client_disconnect" in failed.payload["error_message"] and failed.actor.value == "system"
    [worker_cancelled] = of_type(h.events(failed.payload["worker_session_id"]), "turn.cancelled")
    assert (worker_cancelled.payload["reason"], worker_cancelled.actor.value) == ("client_disconnect", "system")
