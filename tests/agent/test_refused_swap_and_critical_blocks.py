"""A refused /model swap leaves routing.constraint_failure (canonical format §8.4) and an event log
DECISION_TRACE; a block marked critical fails the request instead of being dropped (§4.2.2)."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from support_servers import Reply

from metis_core.agent.session import Session
from metis_core.errors import CapabilityMismatchError, CriticalBlockDropError
from metis_core.events.payloads.routing import RoutingValidationFailure
from metis_core.export import event_log_entries, load_recording, verify_event_log
from metis_core.export.event_log_schemas import PAYLOAD_SCHEMAS
from metis_core.export.output import jsonl_bytes
from metis_core.messages import ImageBlock, ImageSource, Message, ThinkingBlock
from metis_core.models import fit
from metis_core.routing.engine import VALIDATION_FAILURE_FOR_CAPABILITY

from .conftest import Harness


def test_every_capability_check_fits_names_maps_to_a_catalog_validation_failure() -> None:
    named = set(re.findall(r'"(supports_\w+|max_context_tokens)",\n', Path(fit.__file__).read_text()))
    assert named == set(VALIDATION_FAILURE_FOR_CAPABILITY)
    assert set(VALIDATION_FAILURE_FOR_CAPABILITY.values()) <= set(typing.get_args(RoutingValidationFailure))


async def test_a_refused_swap_is_an_event_with_the_missing_capability_and_a_decision_trace(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")])
    session = h.runtime.sessions.create(h.workspace)
    image = ImageBlock(source=ImageSource(kind="base64", data="iVBORw0KGgo="), media_type="image/png")
    await h.runtime.turns.run(session, "what is in this picture?", attachments=[image])
    h.runtime.sessions.swap_model(session, "openai:gpt-4o")  # carries images: accepted, no event
    with pytest.raises(CapabilityMismatchError):
        h.runtime.sessions.swap_model(session, "ollama:llama3")
    assert session.sticky_model == "openai:gpt-4o"

    events = h.events(session.id)
    refused = [e for e in events if e.type == "routing.constraint_failure"]
    assert len(refused) == 1
    assert refused[0].payload == {
        "action": "model_swap", "requested": "ollama:llama3", "candidate_model": "ollama:llama3",
        "active_model": "openai:gpt-4o", "validation_failure": "no_vision_support",
        "missing_capability": "supports_images", "reason": refused[0].payload["reason"]}
    assert "image" in refused[0].payload["reason"] and refused[0].sensitivity.value == "pseudonymous"

    entries, summary = event_log_entries(load_recording(session.id, h.runtime.store, h.runtime.trace))
    assert verify_event_log(jsonl_bytes(entries).splitlines()).ok
    trace = next(e for e in entries if e["source_event_id"] == refused[0].id)
    assert trace["event_type"] == "DECISION_TRACE"
    Draft202012Validator(PAYLOAD_SCHEMAS["DECISION_TRACE"]).validate(trace["payload"])
    assert trace["payload"]["outputs"] == {"decision": "refused", "validation_failure": "no_vision_support",
                                           "missing_capability": "supports_images", "active_model": "openai:gpt-4o"}
    assert "routing.constraint_failure" not in summary.skipped


async def thinking_session(h: Harness) -> tuple[Session, Message, int]:
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__thinking_delta_signature_delta.sse")])
    session = h.runtime.sessions.create(h.workspace)
    result = await h.runtime.turns.run(session, "think first")
    answer = result.final
    assert answer is not None
    index = next(i for i, b in enumerate(answer.content) if isinstance(b, ThinkingBlock))
    return session, answer, index


async def test_a_dropped_block_is_dropped_unless_marked_critical_then_the_request_fails_unsent(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    session, answer, index = await thinking_session(h)
    client = h.runtime.client
    history = list(session.history)

    h.script.script("openai", [Reply.fixture("openai_chat", "response__text.json")])
    client.complete(history, "openai:gpt-4o")  # unmarked: the thinking block is dropped, the call goes out
    assert len(h.requests_to("openai.test")) == 1

    marked = answer.model_copy(update={"metadata": answer.metadata.model_copy(update={"critical_blocks": [index]})})
    critical = [marked if m.id == answer.id else m for m in history]
    with pytest.raises(CriticalBlockDropError) as caught:
        client.complete(critical, "openai:gpt-4o")
    assert (caught.value.message_id, caught.value.block_index, caught.value.capability) == (answer.id, index,
                                                                                           "thinking")
    assert "marked critical" in str(caught.value) and len(h.requests_to("openai.test")) == 1  # nothing sent
    assert any(getattr(r, "critical", False) for r in caplog.records)

    h.script.script("anthropic", [Reply.fixture("anthropic", "response__text.json")])
    client.complete(critical, "anthropic:claude-haiku-4-5")  # its own provider carries it: no failure
    replayed = h.requests_to("anthropic.test")[-1]["messages"][1]["content"]
    assert replayed[index]["type"] == "thinking"


async def test_a_turn_whose_history_holds_a_critical_block_the_model_cannot_carry_fails_on_the_record(
    harness: Harness,
) -> None:
    h = harness
    session, answer, index = await thinking_session(h)
    history = session.history
    position = next(i for i, m in enumerate(history) if m.id == answer.id)
    history[position] = answer.model_copy(
        update={"metadata": answer.metadata.model_copy(update={"critical_blocks": [index]})})
    h.runtime.sessions.swap_model(session, "openai:gpt-4o")
    result = await h.runtime.turns.run(session, "now on openai")
    assert result.error is not None and "marked critical" in result.error
    assert h.requests_to("openai.test") == []
    completed = [e for e in h.events(session.id) if e.type == "turn.completed"][-1]
    assert "marked critical" in completed.payload["signals_extra"]["error"]
