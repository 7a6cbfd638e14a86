"""Provider-native compaction: where every model of a call compacts on its own side (Anthropic's
server-side `compact_20260112`), the request asks for it at the compaction threshold instead of
metis summarising; the answer's compaction block is stored, recorded as memory.compacted (method
provider) and starts the next request. Elsewhere the portable summary stays (test_compaction.py)."""

from __future__ import annotations

from support_servers import Reply

from metis_core.agent_config import CompactionConfig
from metis_core.messages import CompactionBlock

from .conftest import Harness

OPUS = "anthropic:claude-opus-4-6"


async def test_a_model_that_compacts_itself_is_asked_to_and_its_compaction_is_on_the_record(
    harness: Harness,
) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__hosted_compaction.sse"),
                                  Reply.fixture("anthropic", "stream__text_basic.sse")])
    session = h.runtime.sessions.create(h.workspace)
    h.runtime.sessions.swap_model(session, OPUS)
    await h.runtime.turns.run(session, "summarise what we did")

    (_, _, body, headers) = h.script.requests[0]
    window = h.runtime.registry.capabilities(OPUS).max_context_tokens
    trigger = max(int(window * CompactionConfig().threshold), 50_000)
    assert body["context_management"] == {"edits": [
        {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": trigger}}]}
    assert "compact-2026-01-12" in headers["anthropic-beta"].split(",")

    answer = session.history[-1]
    assert any(isinstance(b, CompactionBlock) for b in answer.content)
    (compacted,) = [e for e in h.events(session.id) if e.type == "memory.compacted"]
    assert compacted.payload["method"] == "provider" and compacted.payload["compaction_message_id"] == answer.id
    assert compacted.payload["pricing_version"] == "in_call"  # billed inside the call's own usage

    await h.runtime.turns.run(session, "and next?")
    (_, _, follow, _) = h.script.requests[1]
    replies = [m for m in follow["messages"] if m["role"] == "assistant"]
    assert replies[0]["content"][0]["type"] == "compaction"  # the provider's block, sent back as it came


async def test_native_compaction_can_be_turned_off_and_other_models_never_get_it(harness: Harness) -> None:
    h = harness
    h.script.script("anthropic", [Reply.fixture("anthropic", "stream__text_basic.sse")] * 2)
    session = h.runtime.sessions.create(h.workspace)
    await h.runtime.turns.run(session, "hello")  # the harness's default model has no native compaction
    assert "context_management" not in h.script.requests[0][2]

    h.runtime.compactor.settings = CompactionConfig(native=False)
    h.runtime.sessions.swap_model(session, OPUS)
    await h.runtime.turns.run(session, "hello again")
    assert "context_management" not in h.script.requests[1][2]


def test_the_responses_api_is_asked_with_its_own_compaction_setting() -> None:
    from metis_core.adapters._common.tool_ids import ToolIdMap
    from metis_core.adapters.base import AdapterOptions
    from metis_core.adapters.openai_responses.request import build_request
    from metis_core.messages import user_message
    from metis_core.models.capabilities import AdapterCapabilities

    declared = AdapterCapabilities(native_compaction="compaction")  # as a config `models:` entry declares it
    asked = build_request([user_message("hi")], [], AdapterOptions(model="openai_responses:gpt-5",
                                                                   compact_at_tokens=9000), ToolIdMap(), declared)
    assert asked.body["context_management"] == [{"type": "compaction", "compact_threshold": 9000}]
    plain = build_request([user_message("hi")], [], AdapterOptions(model="openai_responses:gpt-5",
                                                                   compact_at_tokens=9000), ToolIdMap(),
                          AdapterCapabilities())
    assert "context_management" not in plain.body  # a model that does not declare it is never asked
