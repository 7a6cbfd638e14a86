"""The agent's structured turn falls back along the routed chain the way a plain turn does.

Anthropic (first in the chain) fails with its recorded 529 or 400; OpenAI is scripted with its
recorded text stream carrying the JSON answer. Every byte goes through the real HTTP client, the
adapters' stream parsing and the fallback chain; each attempt is on the record like a plain turn's
(llm.call_started, llm.call_failed, the next member's llm.call_started parented on that failure,
health events), and the member the chain falls back to gets its own plan for the schema.
"""

from __future__ import annotations

import json

from structured_wire import anthropic_stream, openai_chat_stream
from support_servers import Reply

from metis_core.agent.structured_turn import run_structured_turn
from metis_core.errors import InvalidRequestError
from metis_core.structured.policy import OutputPolicy
from metis_core.structured.spec import output_spec

from .conftest import Harness

CHAIN_POLICY = """
default: resilient
chains:
  resilient: [anthropic:claude-haiku-4-5, openai:gpt-4o]
"""
NUMBERS = output_spec({"title": "numbers", "type": "array", "items": {"type": "integer"}}, name="numbers")
FIRST, SECOND = "anthropic:claude-haiku-4-5", "openai:gpt-4o"


def overloaded() -> Reply:
    return Reply.fixture("anthropic", "error__529_overloaded_error.json", 529)


def openai_answer(text: str) -> Reply:
    return Reply(200, openai_chat_stream(text), {"content-type": "text/event-stream"})


def use_chain(h: Harness, failure_threshold: int) -> None:
    (h.home / "routing.yaml").write_text(CHAIN_POLICY)
    h.runtime.health.policy = type(h.runtime.health.policy)(failure_threshold=failure_threshold)


async def test_a_failing_first_model_falls_back_to_the_next_with_its_own_plan_on_the_record(
    harness: Harness,
) -> None:
    h = harness
    use_chain(h, failure_threshold=1)
    h.script.script("anthropic", [overloaded()])
    h.script.script("openai", [openai_answer("[12345, 67890]")])
    session = h.runtime.sessions.create(h.workspace)
    out = await run_structured_turn(h.runtime.turns, session, "Two numbers please", NUMBERS)

    assert out.turn.error is None and out.output is not None
    assert out.output.value == [12345, 67890] and out.output.model == SECOND and out.turn.model == SECOND
    answer = session.history[-1]
    assert json.loads(answer.text()) == [12345, 67890] and answer.metadata.model == SECOND
    assert answer.metadata.routing is not None and f"fallback after {FIRST}" in answer.metadata.routing.reason

    [anthropic_body] = h.requests_to("anthropic.test")
    [openai_body] = h.requests_to("openai.test")
    assert anthropic_body["output_config"]["format"]["type"] == "json_schema"  # Anthropic's plan
    assert openai_body["response_format"]["type"] == "json_schema"  # OpenAI's own plan, not Anthropic's
    assert openai_body["response_format"]["json_schema"]["name"] == "numbers" and "output_config" not in openai_body

    turn = [e for e in h.events(session.id) if e.turn_id == out.turn.turn_id]
    types = [e.type for e in turn]
    assert [t for t in types if t.startswith("llm.")] == ["llm.call_started", "llm.call_failed", "llm.call_started",
                                                          "llm.call_completed"]
    started = [e for e in turn if e.type == "llm.call_started"]
    [failed] = [e for e in turn if e.type == "llm.call_failed"]
    [completed] = [e for e in turn if e.type == "llm.call_completed"]
    turn_started = next(e for e in turn if e.type == "turn.started")
    assert [e.payload["model"] for e in started] == [FIRST, SECOND]
    assert started[0].parent_event_id == turn_started.id and failed.parent_event_id == started[0].id
    assert started[1].parent_event_id == failed.id and completed.parent_event_id == started[1].id
    assert failed.payload["error_class"] == "server_error" and completed.payload["model"] == SECOND
    assert all(e.payload["request_options"]["output"]["name"] == "numbers" for e in started)
    unavailable = [e for e in h.events(session.id) if e.type == "routing.provider_unavailable"]
    assert [e.parent_event_id for e in unavailable] == [failed.id]
    [closed] = [e for e in turn if e.type == "turn.completed"]
    assert closed.payload["llm_call_count"] == 2 and closed.payload["stop_reason"] == "end_turn"

    # Health-aware: the benched first model is skipped by the next structured turn.
    h.script.script("openai", [openai_answer("[1, 2]")])
    again = await run_structured_turn(h.runtime.turns, session, "Two more", NUMBERS)
    assert again.output is not None and again.output.value == [1, 2]
    assert len(h.requests_to("anthropic.test")) == 1 and len(h.requests_to("openai.test")) == 2


async def test_a_retry_stays_with_the_model_that_answered(harness: Harness) -> None:
    h = harness
    use_chain(h, failure_threshold=5)  # the first model stays in the chain's order
    h.script.script("anthropic", [overloaded()])
    h.script.script("openai", [openai_answer('["one", "two"]'), openai_answer("[3, 4]")])
    session = h.runtime.sessions.create(h.workspace)
    out = await run_structured_turn(h.runtime.turns, session, "Two numbers please", NUMBERS,
                                    policy=OutputPolicy(max_retries=1))

    assert out.output is not None and out.output.value == [3, 4] and out.output.model == SECOND
    assert [a.outcome for a in out.output.attempts] == ["schema-violation", "ok"]
    assert len(h.requests_to("anthropic.test")) == 1  # the corrective retry went to OpenAI, which answered
    correction = json.dumps(h.requests_to("openai.test")[1]["messages"][-1])
    assert "must satisfy type" in correction and "one" not in correction
    retried = [e for e in h.events(session.id) if e.type == "llm.output_retried"]
    assert len(retried) == 1 and retried[0].payload["model"] == SECOND


async def test_an_invalid_request_is_not_retried_on_another_model(harness: Harness) -> None:
    h = harness
    use_chain(h, failure_threshold=1)
    h.script.script("anthropic", [Reply.fixture("anthropic", "error__400_invalid_request_error_bad_shape.json", 400)])
    session = h.runtime.sessions.create(h.workspace)
    out = await run_structured_turn(h.runtime.turns, session, "Two numbers please", NUMBERS)

    assert out.output is None and isinstance(out.turn.failure, InvalidRequestError)
    assert h.requests_to("openai.test") == []
    types = [e.type for e in h.events(session.id) if e.turn_id == out.turn.turn_id]
    assert [t for t in types if t.startswith("llm.")] == ["llm.call_started", "llm.call_failed"]
    assert types[-1] == "turn.completed"


async def test_a_single_model_route_answers_as_before(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply(200, anthropic_stream(), {"content-type": "text/event-stream"})])
    session = h.runtime.sessions.create(h.workspace)
    out = await run_structured_turn(h.runtime.turns, session, "Two numbers please", NUMBERS)
    assert out.output is not None and out.output.value == [12345, 67890] and out.output.model == FIRST
    assert h.requests_to("openai.test") == []
