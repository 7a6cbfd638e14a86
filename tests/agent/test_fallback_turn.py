"""Fallback mid-session, through the agent: Anthropic fails, OpenAI fails, Gemini answers.

The history already holds tool calls and signed thinking from Anthropic; each failed attempt is
recorded once with the right parent, health events hang off the failure that caused them, and the
answer names the model that served it. An invalid routing.yaml keeps the last good policy in force.
"""

from __future__ import annotations

from support_servers import Reply

from metis_core.agent.confirmation import ConfirmationAnswer
from metis_core.messages import MessageStatus

from .conftest import Harness

CHAIN_POLICY = """
default: resilient
chains:
  resilient: [anthropic:claude-haiku-4-5, openai:gpt-4o, gemini:gemini-2.5-flash]
"""


async def test_fallback_mid_session_records_each_attempt_with_its_parent(harness: Harness) -> None:
    h = harness
    (h.home / "routing.yaml").write_text(CHAIN_POLICY)
    h.runtime.health.policy = type(h.runtime.health.policy)(failure_threshold=1)
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__thinking_delta_signature_delta.sse"),
                                  Reply.fixture("anthropic", "stream__tool_use_input_json_delta.sse"),
                                  Reply.fixture("anthropic", "stream__text_basic.sse")])
    h.confirmer.answers = [ConfirmationAnswer("allow", "once")]
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "think first")
    await h.runtime.turns.run(session, "weather in Paris?")
    assert any(m.thinking() for m in session.history) and any(m.tool_uses() for m in session.history)

    h.script.script("anthropic", [Reply.fixture("anthropic", "error__529_overloaded_error.json", 529)])
    h.script.script("openai", [Reply.fixture("openai_chat", "error__429_rate_limit_exceeded.json", 429)])
    h.script.script("gemini", [Reply.fixture("gemini", "stream__text.sse")])
    result = await h.runtime.turns.run(session, "and tomorrow?")

    assert result.error is None and result.final is not None
    assert result.final.status is MessageStatus.COMPLETE
    assert result.final.metadata.model == "gemini:gemini-2.5-flash"
    events = h.events(session.id)
    turn = [e for e in events if e.turn_id == result.turn_id]
    types = [e.type for e in turn]
    assert types.count("route.decided") == 1
    assert [t for t in types if t.startswith("llm.")] == [
        "llm.call_started", "llm.call_failed", "llm.call_started", "llm.call_failed",
        "llm.call_started", "llm.call_completed"]
    started = [e for e in turn if e.type == "llm.call_started"]
    failed = [e for e in turn if e.type == "llm.call_failed"]
    turn_started = next(e for e in turn if e.type == "turn.started")
    assert [e.payload["model"] for e in started] == ["anthropic:claude-haiku-4-5", "openai:gpt-4o",
                                                     "gemini:gemini-2.5-flash"]
    assert started[0].parent_event_id == turn_started.id
    assert failed[0].parent_event_id == started[0].id and started[1].parent_event_id == failed[0].id
    assert failed[1].parent_event_id == started[1].id and started[2].parent_event_id == failed[1].id
    assert [e.payload["error_class"] for e in failed] == ["server_error", "rate_limit"]
    unavailable = [e for e in events if e.type == "routing.provider_unavailable"]
    assert [e.parent_event_id for e in unavailable] == [failed[0].id, failed[1].id]
    assert all(e.session_id == session.id for e in unavailable)

    # The Gemini request carried the history through its own adapter: no Anthropic signatures.
    gemini_body = h.requests_to("gemini.test")[0]
    assert "thoughtSignature" not in str(gemini_body) and "signature" not in str(gemini_body)
    assert any("functionCall" in part for c in gemini_body["contents"] for part in c["parts"])


async def test_invalid_policy_keeps_the_last_good_one_and_emits_policy_invalid(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse"),
                                  Reply.fixture("anthropic", "stream__text_basic.sse")])
    session = h.runtime.sessions.create(h.workspace)
    first = await h.runtime.turns.run(session, "hello")
    (h.home / "routing.yaml").write_text("default: [this is not a model id\n")
    second = await h.runtime.turns.run(session, "hello again")
    assert first.model == second.model == "anthropic:claude-haiku-4-5"
    invalid = [e for e in h.events(session.id) if e.type == "routing.policy_invalid"]
    assert len(invalid) == 1
    assert invalid[0].payload["using_last_known_good"] is True
    assert invalid[0].payload["policy_path"].endswith("routing.yaml")


async def test_a_turn_whose_every_model_fails_is_still_closed_on_the_record(harness: Harness) -> None:
    h = harness
    (h.home / "routing.yaml").write_text(CHAIN_POLICY)
    h.script.script("anthropic", [Reply.fixture("anthropic", "error__529_overloaded_error.json", 529)])
    h.script.script("openai", [Reply.fixture("openai_chat", "error__429_rate_limit_exceeded.json", 429)])
    h.script.script("gemini", [Reply.fixture("gemini", "error__429_resource_exhausted_quota.json", 429)])
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "anyone there?")
    assert result.error is not None and "no model in the chain could answer" in result.error
    completed = [e for e in h.events(session.id) if e.type == "turn.completed"]
    assert len(completed) == 1 and completed[0].payload["signals_extra"]["error"]
    assert completed[0].payload["llm_call_count"] == 3


async def test_a_turn_no_model_can_take_is_closed_and_the_reason_raised(harness: Harness) -> None:
    import pytest

    from metis_core.routing.engine import NoRoutableModelError

    h = harness
    (h.home / "routing.yaml").write_text("default: ollama:llama3\n")
    session = h.runtime.sessions.create(h.workspace)
    from metis_core.messages import ImageBlock, ImageSource

    image = ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgo="), media_type="image/png")
    with pytest.raises(NoRoutableModelError, match="cannot read images"):
        await h.runtime.turns.run(session, "what is this?", attachments=[image])
    events = h.events(session.id)
    assert [e.type for e in events] == ["session.created", "turn.started", "turn.completed"]
    assert "cannot read images" in events[-1].payload["signals_extra"]["error"]
    assert h.script.requests == []
